package client

import (
	"context"
	"crypto/tls"
	"time"
)

// Leader election (redis-feats servers and dflockd-ng): an election is the
// lock of the same name; the holder is the leader. Observers and
// candidates get leader pushes: elected, resigned, failover.

// electFamily is an election's commands: elect to acquire, resign to give
// up (which, unlike r, tells the observers), n to renew.
var electFamily = lockCmds{acquire: "elect", release: "resign", renew: "n"}

// LeaderEvent is one leadership change of an observed election.
type LeaderEvent struct {
	Type string // "elected", "resigned" or "failover"
	Key  string // the election
}

// LeaderConn is a connection used for elections: Elect campaigns, Observe
// subscribes to an election's changes, and Events delivers them.
type LeaderConn struct {
	pushConn[LeaderEvent]
}

// NewLeaderConn starts delivering c's leader pushes on Events. c remains
// usable for other requests; its context applies to the methods.
func NewLeaderConn(c *Conn) *LeaderConn {
	return &LeaderConn{newPushConn(c, pushLeader, func(typ, key string) LeaderEvent {
		return LeaderEvent{Type: typ, Key: key}
	})}
}

// Elect waits up to timeout to become the leader of key and returns the
// leadership's token, lease and (redis-feats) fence; a timeout is
// ErrTimeout. The lease must be renewed (Renew) to stay leader.
func (lc *LeaderConn) Elect(key string, timeout time.Duration, opts ...Option) (token string, leaseTTL int, fence uint64, err error) {
	g, err := acquire(lc.conn, electFamily.acquire, key, acquireArg(timeout, 0, collect(opts)))
	return g.token, g.lease, g.fence, err
}

// Resign gives up the leadership held with token; observers are told and
// the next candidate in line is elected.
func (lc *LeaderConn) Resign(key, token string) error {
	return release(lc.conn, electFamily.release, key, token)
}

// Renew renews the leadership's lease; see the function Renew.
func (lc *LeaderConn) Renew(key, token string, opts ...Option) (int, uint64, error) {
	return renew(lc.conn, electFamily.renew, key, token, collect(opts))
}

// Observe subscribes to the election's changes. If it has a leader, an
// elected event follows at once.
func (lc *LeaderConn) Observe(key string) error {
	return subscribe(lc.conn, "observe", key, nil)
}

// Unobserve ends the subscription.
func (lc *LeaderConn) Unobserve(key string) error {
	return subscribe(lc.conn, "unobserve", key, nil)
}

// Events returns the channel of leadership changes. It is closed when the
// connection ends.
func (lc *LeaderConn) Events() <-chan LeaderEvent { return lc.sink.ch }

// Election takes part in the election Key: Campaign waits to become leader
// and then renews the leadership in the background until Resign. Set the
// fields before first use; do not copy an Election after that.
type Election struct {
	Key            string
	AcquireTimeout time.Duration // how long Campaign waits; default 10 s
	LeaseTTL       int
	Servers        []string
	ShardFunc      ShardFunc
	TLSConfig      *tls.Config
	AuthToken      string
	RenewRatio     float64
	OnElected      func()      // called (on its own goroutine) when Campaign wins
	OnResigned     func()      // called when leadership ends: Resign, or a lost lease
	OnRenewError   func(error) // called when leadership is lost
	Dialer         *Dialer     // see Lock.Dialer

	hold
}

func (e *Election) config() holdConfig {
	hc := holdConfig{e.Key, e.AcquireTimeout, e.LeaseTTL, e.Servers, e.ShardFunc, e.RenewRatio, e.TLSConfig, e.AuthToken, nil, e.Dialer}
	onErr, onResigned := e.OnRenewError, e.OnResigned
	hc.onRenewError = func(err error) {
		if onErr != nil {
			onErr(err)
		}
		if onResigned != nil {
			onResigned()
		}
	}
	return hc
}

// Campaign connects and waits up to AcquireTimeout to become leader; it
// returns false and no error on timeout. Cancelling ctx abandons the
// campaign.
func (e *Election) Campaign(ctx context.Context) (bool, error) {
	won, err := e.hold.acquire(ctx, e.config(), electFamily, 0)
	if won && e.OnElected != nil {
		go e.OnElected()
	}
	return won, err
}

// Resign gives up the leadership and closes the connection. After a lost
// lease there is nothing to give up and it returns nil.
func (e *Election) Resign(ctx context.Context) error {
	wasLeader := e.IsLeader()
	err := e.hold.release(ctx, e.config(), "")
	if wasLeader && e.OnResigned != nil {
		go e.OnResigned()
	}
	return err
}

// IsLeader reports whether this Election holds the leadership.
func (e *Election) IsLeader() bool { return e.Token() != "" }
