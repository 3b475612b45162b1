package client

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"time"
)

// Defaults of a Dialer's zero fields.
const (
	// DefaultAddr is dflockd's default listen address.
	DefaultAddr = "127.0.0.1:6388"
	// DefaultDialTimeout bounds connecting, the TLS handshake and auth.
	DefaultDialTimeout = 10 * time.Second
	// DefaultKeepAlive is the idle time after which a ping is sent: well
	// under dflockd's default read timeout of 23 s, after which the server
	// drops a silent connection.
	DefaultKeepAlive = 10 * time.Second
	// DefaultMaxRedirects is how many not-leader redirects one request
	// follows in cluster mode.
	DefaultMaxRedirects = 3
	// DefaultLeaderWait is how long a request waits for a cluster that
	// has no reachable leader: a failover takes 1–3 s with dflockd-ng's
	// default raft timeouts, and longer on a loaded machine.
	DefaultLeaderWait = 10 * time.Second

	// tcpKeepAlive is the interval of TCP keepalive probes, which notice a
	// peer that vanished without closing.
	tcpKeepAlive = 30 * time.Second
)

// Dialer holds the settings for connecting; its zero value connects in
// plain TCP with the defaults above. TLS, auth and cluster mode apply to
// every connection it makes, including those made to follow a redirect.
type Dialer struct {
	// Timeout bounds connecting, the TLS handshake and auth together.
	// 0 means DefaultDialTimeout.
	Timeout time.Duration
	// TLSConfig, when not nil, makes every connection TLS. An empty
	// ServerName is taken from the address dialled.
	TLSConfig *tls.Config
	// AuthToken, when not empty, is sent with auth as the first request.
	// A server without auth configured answers auth with error and serves
	// everyone; that is accepted, since the connection is usable either way.
	AuthToken string
	// ReplyTimeout, when > 0, gives up the connection if a reply is later
	// than the request may block on the server (its timeout) plus this.
	// 0 waits as long as the request's context allows.
	ReplyTimeout time.Duration
	// KeepAlive is the idle time after which a ping is sent, so that the
	// server's read timeout does not end idle connections and their
	// subscriptions. 0 means DefaultKeepAlive; < 0 disables pings.
	KeepAlive time.Duration
	// Members turns on cluster mode: the addresses of the cluster's
	// members, as they advertise themselves in error_not_leader replies.
	// A refused request is resent to the leader the follower names only if
	// that address is listed here, and to the next member when the
	// follower knows no leader or the leader it names cannot be reached.
	// Dialling "" tries the members in order. Lock, Semaphore, RWLock
	// and Election keep their holds through a failover in cluster mode
	// (see Lock.Lost).
	Members []string
	// MaxRedirects is how many times one request may be resent to a
	// leader a member named before it fails with a *NotLeaderError.
	// 0 means DefaultMaxRedirects; < 0 follows none, and makes Members a
	// plain list of addresses of one service, tried in order by Dial.
	MaxRedirects int
	// LeaderWait is how long, in cluster mode, a request or a dial waits
	// for the cluster to have a leader it can reach: while members answer
	// a bare error_not_leader (an election is under way), or cannot be
	// reached (the leader died and the followers still name it), the
	// members are tried in turn, and a member that names itself (elected,
	// still taking over) is asked again, with pauses growing from 50 ms to 1 s,
	// for up to this long after the first failure; then the request fails
	// with a *NotLeaderError that wraps the last connection error.
	// 0 means DefaultLeaderWait; < 0 tries each member once.
	LeaderWait time.Duration
	// StableRef, when not empty, is sent as `stable-ref <ref>` on every
	// connection this Dialer makes, after auth and before anything else,
	// including those made to follow a redirect or after a failover. A
	// cluster started with --orphan-ttl then keeps a closed connection's
	// holds and queue places for a new connection presenting the same
	// ref, and the connections of a leader that died become such orphans
	// too: holds made with a ref are renewed after a failover by a
	// connection that presents it (Lock does so). A ref identifies one
	// connection: give each Lock, Semaphore, RWLock or Election its own
	// Dialer and ref, since two live connections presenting one ref take
	// nothing over, and the orphan of the older is closed. 1 to 64
	// printable ASCII bytes; servers without stable-ref refuse the dial.
	StableRef string
	// PushBuffer is how many unread pushes a consumer channel (Signals,
	// Events) holds before further ones are dropped and counted.
	// 0 means DefaultPushBuffer.
	PushBuffer int
}

// Dial connects to a dflockd server at addr (host:port) with the default
// settings: plain TCP, no auth, DefaultDialTimeout.
func Dial(addr string) (*Conn, error) {
	var d Dialer
	return d.Dial(context.Background(), addr)
}

// DialTLS connects to a dflockd server at addr over TLS configured by cfg.
func DialTLS(addr string, cfg *tls.Config) (*Conn, error) {
	d := Dialer{TLSConfig: cfg}
	return d.Dial(context.Background(), addr)
}

// Dial connects to addr and, when an auth token is set, authenticates. In
// cluster mode it starts at addr (the first member when addr is "") and
// tries the other members while that one cannot be reached, for up to
// LeaderWait when none can; without Members an empty addr means
// DefaultAddr. ctx bounds the dial only, not the connection's life.
func (d *Dialer) Dial(ctx context.Context, addr string) (*Conn, error) {
	c := &conn{d: d.withDefaults(), done: make(chan struct{}), moving: make(chan struct{}, 1)}
	var s *session
	var err error
	switch {
	case len(c.d.Members) == 0:
		if addr == "" {
			addr = DefaultAddr
		}
		s, err = c.d.dialSession(ctx, c, addr)
	default:
		if addr == "" {
			addr = c.d.Members[0]
		}
		s, err = c.search(ctx, addr, c.d.newSearch(), nil)
	}
	if err != nil {
		return nil, err
	}
	c.install(s)
	if c.d.KeepAlive > 0 {
		go c.keepAlive(c.d.KeepAlive)
	}
	return &Conn{c: c, ctx: context.Background()}, nil
}

func (d *Dialer) withDefaults() Dialer {
	v := *d
	if v.Timeout <= 0 {
		v.Timeout = DefaultDialTimeout
	}
	if v.KeepAlive == 0 {
		v.KeepAlive = DefaultKeepAlive
	}
	if v.PushBuffer <= 0 {
		v.PushBuffer = DefaultPushBuffer
	}
	if v.LeaderWait == 0 {
		v.LeaderWait = DefaultLeaderWait
	}
	v.Members = append([]string(nil), v.Members...)
	return v
}

// clusterMode reports whether not-leader replies are followed.
func (d *Dialer) clusterMode() bool { return len(d.Members) > 0 && d.MaxRedirects >= 0 }

func (d *Dialer) redirectBudget() int {
	switch {
	case !d.clusterMode():
		return 0
	case d.MaxRedirects == 0:
		return DefaultMaxRedirects
	}
	return d.MaxRedirects
}

// dialSession opens one server connection for c: TCP, TLS, auth, stable
// ref. A member that refuses the stable ref because it does not lead is a
// *NotLeaderError.
func (d *Dialer) dialSession(ctx context.Context, c *conn, addr string) (*session, error) {
	if d.AuthToken != "" {
		if err := checkFrame("auth", "_", d.AuthToken); err != nil {
			return nil, err
		}
	}
	if d.StableRef != "" {
		if err := checkStableRef(d.StableRef); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	nd := net.Dialer{KeepAlive: tcpKeepAlive}
	nc, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if d.TLSConfig != nil {
		cfg := d.TLSConfig
		if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
			cfg = cfg.Clone()
			if host, _, err := net.SplitHostPort(addr); err == nil {
				cfg.ServerName = host
			}
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		nc = tc
	}
	s := newSession(c, nc, addr)
	err = d.authenticate(ctx, s)
	if err == nil {
		err = d.presentRef(ctx, s)
	}
	if err != nil {
		s.fail(fmt.Errorf("%w: %w", ErrClosed, err))
		return nil, err
	}
	return s, nil
}

// authenticate sends auth on a new session when a token is set.
func (d *Dialer) authenticate(ctx context.Context, s *session) error {
	if d.AuthToken == "" {
		return nil
	}
	reply, err := s.roundTrip(ctx, []byte("auth\n_\n"+d.AuthToken+"\n"), 0)
	switch {
	case err != nil:
		return err
	case reply == statusOK, reply == statusError:
		return nil
	case reply == statusAuth:
		return ErrAuth
	}
	return fmt.Errorf("%w to auth: %q", ErrProtocol, reply)
}

// presentRef sends stable-ref on a new session when a ref is set. A
// cluster follower refuses it (it goes through the leader's log).
func (d *Dialer) presentRef(ctx context.Context, s *session) error {
	if d.StableRef == "" {
		return nil
	}
	reply, err := s.roundTrip(ctx, []byte("stable-ref\n"+d.StableRef+"\n_\n"), 0)
	if err != nil {
		return err
	}
	if leader, ok := notLeaderReply(reply); ok {
		return &NotLeaderError{Leader: leader}
	}
	switch reply {
	case statusOK:
		return nil
	case statusAuth:
		return ErrAuth
	}
	return fmt.Errorf("%w: stable-ref: %s", ErrServer, reply)
}

// checkStableRef is the server's rule for a ref: 1 to 64 bytes, each
// printable ASCII, without surrounding spaces (the server trims them, so
// " a" and "a" would be one ref).
func checkStableRef(ref string) error {
	if len(ref) > maxStableRef || strings.TrimSpace(ref) != ref {
		return fmt.Errorf("%w: stable ref %q: 1 to %d printable ASCII bytes without surrounding spaces", ErrInvalid, ref, maxStableRef)
	}
	for i := range len(ref) {
		if ref[i] < 0x20 || ref[i] > 0x7e {
			return fmt.Errorf("%w: stable ref %q: 1 to %d printable ASCII bytes without surrounding spaces", ErrInvalid, ref, maxStableRef)
		}
	}
	return nil
}

// maxStableRef is the longest ref the server accepts (spec §B.13).
const maxStableRef = 64

// Authenticate sends auth with token on c. It returns ErrAuth for any
// answer but ok, as dflockd's client does; a server that requires a token
// then closes the connection. A Dialer's AuthToken authenticates as part
// of dialling instead.
func Authenticate(c *Conn, token string) error {
	if token == "" {
		return compatInvalid("dflockd: empty auth token")
	}
	reply, err := c.request("auth", "_", token)
	if err != nil {
		return err
	}
	if reply != statusOK {
		return ErrAuth
	}
	return nil
}
