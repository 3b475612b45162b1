package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Defaults of the high-level types (Lock, Semaphore, RWLock, Election),
// those of dflockd's client.
const (
	defaultAcquireTimeout = 10 * time.Second
	defaultRenewRatio     = 0.5
	// minRenewInterval keeps a tiny lease from turning renewal into a busy
	// loop.
	minRenewInterval = 50 * time.Millisecond
)

// holdConfig is what a Lock, Semaphore, RWLock or Election tells the hold
// machinery: their exported fields, which must stay fields of each type
// so that composite literals written for dflockd's client compile.
type holdConfig struct {
	key            string
	acquireTimeout time.Duration
	leaseTTL       int
	servers        []string
	shard          ShardFunc
	renewRatio     float64
	tlsConfig      *tls.Config
	authToken      string
	onRenewError   func(error)
	dialer         *Dialer
}

func (hc holdConfig) timeout() time.Duration {
	if hc.acquireTimeout > 0 {
		return hc.acquireTimeout
	}
	return defaultAcquireTimeout
}

func (hc holdConfig) opts() options { return options{leaseTTL: hc.leaseTTL} }

// renewEvery is how often a lease of lease seconds is renewed.
func (hc holdConfig) renewEvery(lease int) time.Duration {
	r := hc.renewRatio
	if r <= 0 {
		r = defaultRenewRatio
	}
	return max(time.Duration(float64(time.Duration(lease)*time.Second)*r), minRenewInterval)
}

// rides reports whether holds ride through a failover: in cluster mode,
// a broken connection is replaced and the hold renewed by token (see
// Lost), where a single server would have released it with the
// connection.
func (hc holdConfig) rides() bool { return hc.dialer != nil && len(hc.dialer.Members) > 0 }

// dial connects to the key's server: the shard ShardFunc picks among
// servers, or in cluster mode (Dialer.Members set) the cluster.
func (hc holdConfig) dial(ctx context.Context) (*Conn, error) {
	d := Dialer{TLSConfig: hc.tlsConfig, AuthToken: hc.authToken}
	if hc.dialer != nil {
		d = *hc.dialer
		if hc.tlsConfig != nil {
			d.TLSConfig = hc.tlsConfig
		}
		if hc.authToken != "" {
			d.AuthToken = hc.authToken
		}
		if len(d.Members) > 0 {
			return d.Dial(ctx, "")
		}
	}
	return d.Dial(ctx, pickServer(hc.servers, hc.shard, hc.key))
}

// hold is the state of one held (or queued-for) slot with its connection
// and background renewal. The high-level types embed it.
type hold struct {
	mu struct {
		sync.Mutex
		conn      *Conn
		cmds      lockCmds // the family of the current hold, for renew and release
		g         grant
		stopRenew context.CancelFunc
		renewDone chan struct{} // closed when the renewal goroutine has exited
		lost      chan struct{} // closed when the current hold is lost
		lostErr   error
	}
}

// Token returns the token of the current hold, or "" when nothing is held
// (also after the hold was lost).
func (h *hold) Token() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mu.g.token
}

// Fence returns the fence of the current hold: the one a redis-feats
// server (or dflockd-ng with --compat=rf) sent with the grant, else the
// token's own (FenceFromToken) where the server's tokens carry their
// fence, as dflockd-ng's do in every profile; the first call on a
// connection asks the server which kind it is (a barrier request, and
// where the server refuses it a try-lock of a key of its own).
// It is 0 when nothing is held, and from servers whose tokens are random
// (dflockd before its fenced v2 tokens): a fence of 0 means none, never a
// number to compare.
func (h *hold) Fence() uint64 {
	h.mu.Lock()
	g, c := h.mu.g, h.mu.conn
	h.mu.Unlock()
	if g.fence != 0 || g.token == "" || c == nil {
		return g.fence
	}
	// Outside the lock: renewal goes on while the server is asked.
	if !c.tokensCarryFences(g.token) {
		return 0
	}
	f, err := FenceFromToken(g.token)
	if err != nil {
		return 0
	}
	// Kept, so that the fence stays known while a failover leaves the
	// hold without a connection to ask on.
	h.mu.Lock()
	if h.mu.g.token == g.token && h.mu.g.fence == 0 {
		h.mu.g.fence = f
	}
	h.mu.Unlock()
	return f
}

// Lost returns a channel that is closed as soon as the current hold is
// lost: a renewal failed (the lease expired, or the server no longer knows
// the token) or the connection broke, which releases the hold on the
// server. Err then says why. The channel of a hold that ends by release
// or Close is never closed; it is nil before the first grant.
//
// In cluster mode (Dialer.Members set) a broken connection is not a loss:
// the leader that died or stepped down leaves the hold to its successor
// until the lease ends. The hold connects again (presenting the Dialer's
// StableRef, if any), renews by token on whichever member now leads, and
// goes on renewing there; token and fence stay the same. It is lost only
// when a renewal is refused (the lease ran out, the token is unknown, the
// key went to someone else), or when no renewal succeeded before the
// lease would run out, counted from when the last successful one was
// sent.
func (h *hold) Lost() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mu.lost
}

// Err returns why the last hold was lost, an error wrapping ErrLost and the
// cause, or nil.
func (h *hold) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mu.lostErr
}

// Close stops renewal and closes the connection without releasing; the
// server then releases the hold itself (with auto-release on, its default)
// or lets the lease run out.
func (h *hold) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopRenewLocked()
	h.resetLocked()
	return nil
}

// resetLocked closes the connection and forgets the hold.
func (h *hold) resetLocked() {
	if h.mu.conn != nil {
		h.mu.conn.Close()
		h.mu.conn = nil
	}
	h.mu.g = grant{}
}

// begin prepares a new attempt: stops renewal of a previous hold, dials a
// fresh connection and installs it.
func (h *hold) begin(ctx context.Context, hc holdConfig, cmds lockCmds) (*Conn, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopRenewLocked()
	h.resetLocked()
	conn, err := hc.dial(ctx)
	if err != nil {
		return nil, err
	}
	h.mu.conn, h.mu.cmds = conn, cmds
	h.mu.lost, h.mu.lostErr = nil, nil
	return conn, nil
}

// finish settles an attempt made on conn that returned g and err: a grant
// starts renewal, a timeout is (false, nil), anything else closes the
// connection. A grant whose ctx ended meanwhile is released and reported as
// the context's error, so a cancelled caller never holds anything.
func (h *hold) finish(ctx context.Context, hc holdConfig, conn *Conn, g grant, err error, keepQueued bool) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.conn != conn { // a concurrent attempt or Close took over
		conn.Close()
		if err == nil {
			err = fmt.Errorf("%w: superseded by another call", ErrClosed)
		}
		return false, err
	}
	switch {
	case err == nil && ctx.Err() != nil:
		release(conn, h.mu.cmds.release, hc.key, g.token)
		err = ctx.Err()
	case err == nil && keepQueued && g.token == "":
		return false, nil // queued: the connection stays for Wait
	case err == nil:
		h.mu.g = g
		h.startRenewLocked(hc)
		return true, nil
	case errors.Is(err, ErrTimeout):
		err = nil
	case ctx.Err() != nil:
		err = ctx.Err()
	}
	h.resetLocked()
	return false, err
}

// acquire is the one-step acquire of every high-level type. In cluster
// mode an acquire whose connection breaks while it waits (the leader
// died) is sent again, on a new connection to whichever member leads,
// for what is left of its timeout (rideAcquire).
func (h *hold) acquire(ctx context.Context, hc holdConfig, cmds lockCmds, limit int) (bool, error) {
	timeout := hc.timeout()
	deadline := time.Now().Add(timeout)
	pause := firstLeaderPause
	for {
		conn, err := h.begin(ctx, hc, cmds)
		if err != nil {
			return false, err
		}
		g, err := acquire(conn.WithContext(ctx), cmds.acquire, hc.key, acquireArg(timeout, limit, hc.opts()))
		if err != nil && h.rideAcquire(ctx, hc, conn, err, deadline) && pauseOrDone(ctx, min(pause, time.Until(deadline))) {
			// Paused, doubling up to a second: a server that keeps
			// hanging up is not dialled in a loop.
			pause = min(2*pause, maxLeaderPause)
			timeout = max(time.Until(deadline), 0)
			continue
		}
		return h.finish(ctx, hc, conn, g, err, false)
	}
}

// pauseOrDone waits d and reports true, or false if ctx ends first.
func pauseOrDone(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// rideAcquire reports whether an acquire on conn that failed with err
// is sent again on a new connection: in cluster mode, when the
// connection broke (a failover, not the caller's cancellation, a Close
// or a refused auth) before the acquire's deadline.
//
// Why that is safe. The client reports only a grant it reads, so it
// never claims a lock it does not hold; what is left to reason about is
// the waiter it abandons on the server. A member whose client
// connection breaks closes the session: the wait is withdrawn (and with
// the server's auto-release, its holds released). A new leader's
// promotion ends the sessions of the one that died: their waits are
// withdrawn, their holds stay until their leases end. So a grant the
// dead leader made just before dying, which never reached the client,
// is held by nobody for at most its lease, and the new acquire queues
// behind it. With Dialer.StableRef and the servers' --orphan-ttl the
// old session is instead kept as an orphan that the new connection
// takes over: the acquire gets its place in the queue back, or the
// grant it never read; an orphan nobody takes over is closed after the
// TTL, like any connection.
func (h *hold) rideAcquire(ctx context.Context, hc holdConfig, conn *Conn, err error, deadline time.Time) bool {
	if !hc.rides() || ctx.Err() != nil || !errors.Is(err, ErrClosed) || errors.Is(err, ErrAuth) || !time.Now().Before(deadline) {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mu.conn == conn // else Close or another attempt took over
}

// enqueue is the first phase of a two-phase acquire.
func (h *hold) enqueue(ctx context.Context, hc holdConfig, cmds lockCmds, arg string) (string, error) {
	conn, err := h.begin(ctx, hc, cmds)
	if err != nil {
		return "", err
	}
	status, g, err := enqueue(conn.WithContext(ctx), cmds.enqueue, hc.key, withLease(arg, hc.opts()))
	if _, err := h.finish(ctx, hc, conn, g, err, true); err != nil {
		return "", err
	}
	return status, nil
}

// wait is the second phase, on the connection of the enqueue.
func (h *hold) wait(ctx context.Context, hc holdConfig, timeout time.Duration) (bool, error) {
	h.mu.Lock()
	conn, cmds := h.mu.conn, h.mu.cmds
	h.mu.Unlock()
	if conn == nil {
		return false, ErrNotQueued
	}
	g, err := acquire(conn.WithContext(ctx), cmds.wait, hc.key, fmt.Sprint(secondsCeil(timeout)))
	return h.finish(ctx, hc, conn, g, err, false)
}

// release stops renewal, releases the hold (with its family's release
// command, or override when set) and closes the connection. After a loss
// there is nothing left to release and it returns nil. In cluster mode a
// hold whose connection broke (a failover under way) is released by token
// on a new connection to the leader.
func (h *hold) release(ctx context.Context, hc holdConfig, override string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopRenewLocked()
	var err error
	if conn := h.mu.conn; conn != nil && h.mu.g.token != "" {
		cmd := h.mu.cmds.release
		if override != "" {
			cmd = override
		}
		if conn.Err() != nil && hc.rides() {
			if conn, err = hc.dial(ctx); err == nil {
				defer conn.Close()
			}
		}
		if err == nil {
			err = release(conn.WithContext(ctx), cmd, hc.key, h.mu.g.token)
		}
	}
	h.resetLocked()
	return err
}

// startRenewLocked starts the renewal goroutine of the hold just granted.
func (h *hold) startRenewLocked(hc holdConfig) {
	ctx, cancel := context.WithCancel(context.Background())
	done, lost := make(chan struct{}), make(chan struct{})
	h.mu.stopRenew, h.mu.renewDone, h.mu.lost, h.mu.lostErr = cancel, done, lost, nil
	go h.renewLoop(ctx, done, hc, h.mu.conn, h.mu.cmds.renew, h.mu.g)
}

// stopRenewLocked stops the renewal goroutine and waits for it; mu is
// released meanwhile, because a failing renewal takes it to record the
// loss.
func (h *hold) stopRenewLocked() {
	if h.mu.stopRenew == nil {
		return
	}
	h.mu.stopRenew()
	done := h.mu.renewDone
	h.mu.stopRenew, h.mu.renewDone = nil, nil
	h.mu.Unlock()
	<-done
	h.mu.Lock()
}

// renewLoop renews g every hc.renewEvery until stopped, and reports the
// hold lost when a renewal fails or the connection ends; in cluster mode
// only when the hold really is gone (reconnect). A renewal is never cut
// short by stopping (that would break the connection the release needs);
// it is bounded by the lease, after which the hold is gone anyway.
func (h *hold) renewLoop(stop context.Context, done chan struct{}, hc holdConfig, conn *Conn, cmd string, g grant) {
	defer close(done)
	lease := time.Duration(g.lease) * time.Second
	// expires is when the lease ends at the latest for all this client
	// knows. The server started it before the grant arrived, and restarts
	// it when a renewal arrives, after it was sent: counting from the
	// grant's arrival, then from each successful renewal's sending, errs
	// towards ending early (by a round trip at the first).
	expires := time.Now().Add(lease)
	t := time.NewTimer(hc.renewEvery(g.lease))
	defer t.Stop()
	for {
		var err error
		select {
		case <-stop.Done():
			return
		case <-conn.Done():
			err = conn.Err()
		case <-t.C:
		}
		sent := time.Now()
		remaining, fence := g.lease, uint64(0)
		if err == nil {
			ctx, cancel := context.WithDeadline(context.Background(), expires)
			remaining, fence, err = renew(conn.WithContext(ctx), cmd, hc.key, g.token, hc.opts())
			cancel()
		}
		if err != nil && hc.rides() && !refused(err) && stop.Err() == nil {
			conn, remaining, fence, sent, err = h.reconnect(stop, done, hc, cmd, g.token, expires, err)
		}
		if err != nil {
			if stop.Err() == nil {
				h.lose(done, hc, err)
			}
			return
		}
		if remaining <= 0 { // not a lease: keep to the granted one
			remaining = g.lease
		}
		expires = sent.Add(time.Duration(remaining) * time.Second)
		if fence > 0 {
			h.mu.Lock()
			if h.mu.renewDone == done {
				h.mu.g.fence = fence
			}
			h.mu.Unlock()
		}
		// Drained first: a tick that came while the connection broke must
		// not cut the next interval short (timers of modules before Go
		// 1.23 keep it).
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(hc.renewEvery(min(g.lease, remaining)))
	}
}

// refused reports whether a renewal's error is the server's answer that
// the hold is gone (lease expired, token unknown, key held by another;
// or auth refused, so it cannot be asked), rather than a failure to ask
// (the connection broke, no leader could be reached, the member drains).
func refused(err error) bool {
	switch {
	case errors.Is(err, ErrNotLeader), errors.Is(err, ErrDraining):
		return false
	}
	return errors.Is(err, ErrServer) || errors.Is(err, ErrLeaseExpired) || errors.Is(err, ErrAuth) || errors.Is(err, ErrInvalid)
}

// reconnect keeps the hold through a failover after a renewal on its
// connection failed with cause: it dials the cluster again (Dialer.Dial
// waits for a leader) and renews by token there, retrying with pauses
// until a renewal succeeds, the server refuses one, or the lease would
// have run out (expires). The new connection replaces the hold's, unless
// the hold was stopped meanwhile. It returns what the renewal returned
// and when it was sent.
func (h *hold) reconnect(stop context.Context, done chan struct{}, hc holdConfig, cmd, token string, expires time.Time, cause error) (*Conn, int, uint64, time.Time, error) {
	h.mu.Lock()
	if h.mu.renewDone == done && h.mu.conn != nil {
		h.mu.conn.Close() // broken, or talking to a member that lost the way to the leader
	}
	h.mu.Unlock()
	ctx, cancel := context.WithDeadline(stop, expires)
	defer cancel()
	pause := firstLeaderPause
	for {
		sent := time.Now()
		conn, err := hc.dial(ctx)
		if err == nil {
			var remaining int
			var fence uint64
			if remaining, fence, err = renew(conn.WithContext(ctx), cmd, hc.key, token, hc.opts()); err == nil {
				if h.adopt(done, conn) {
					return conn, remaining, fence, sent, nil
				}
				err = stop.Err() // stopped: the release has the last word
			}
			conn.Close()
			if refused(err) {
				return nil, 0, 0, sent, err
			}
		}
		if stop.Err() != nil {
			return nil, 0, 0, sent, stop.Err()
		}
		if ctx.Err() != nil {
			if err == nil || errors.Is(err, context.DeadlineExceeded) {
				err = cause
			}
			return nil, 0, 0, sent, fmt.Errorf("%w: no renewal reached the cluster's leader before the lease ran out (last: %w)", ErrLeaseExpired, err)
		}
		cause = err
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		pause = min(2*pause, maxLeaderPause)
	}
}

// adopt makes conn the connection of the hold renewed by the goroutine
// owning done, unless it was stopped meanwhile.
func (h *hold) adopt(done chan struct{}, conn *Conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.renewDone != done {
		return false
	}
	h.mu.conn = conn
	return true
}

// lose records the loss of the hold renewed by the goroutine owning done,
// unless it was stopped meanwhile, and tells the callback.
func (h *hold) lose(done chan struct{}, hc holdConfig, cause error) {
	h.mu.Lock()
	if h.mu.renewDone != done {
		h.mu.Unlock()
		return
	}
	h.mu.lostErr = fmt.Errorf("%w: %w", ErrLost, cause)
	close(h.mu.lost)
	h.mu.g = grant{}
	h.mu.Unlock()
	if hc.onRenewError != nil {
		go hc.onRenewError(cause)
	}
}
