package client

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Conn is a connection to a dflockd server, made by Dial, DialTLS or a
// Dialer. It is safe for concurrent use: requests from several goroutines
// are pipelined on the one connection and every reply is matched to its
// request. The server answers in order, so a request blocked on the
// server (a lock wait, say) delays the requests sent after it; give
// blocking work a connection of its own.
//
// The server ties locks, two-phase enqueues and subscriptions to the
// connection: closing it releases what it held (unless the server runs
// with auto-release disabled).
//
// Requests run under the Conn's context, context.Background() unless the
// Conn came from WithContext. Cancelling a request in flight closes the
// connection: the protocol cannot withdraw a request, and its reply would
// otherwise be taken for the next one's.
type Conn struct {
	c   *conn
	ctx context.Context
}

// conn is the state every Conn value of one connection shares.
type conn struct {
	d    Dialer        // settings, with defaults filled in
	done chan struct{} // closed when the connection ends for good

	redirectMu sync.Mutex // one redirect at a time

	// fenced: whether the server's tokens begin with their fence
	// (tokensCarryFences): 0 not asked yet, fencedYes, fencedNo.
	fenced atomic.Int32

	mu struct {
		sync.Mutex
		sess  *session // the server connection in use
		err   error    // why the connection ended; nil while open
		sinks map[string][]pushSink
	}
}

// WithContext returns a Conn for the same connection whose requests run
// under ctx: a deadline or cancellation of ctx ends a request waiting on
// it. Every function of this package that takes a *Conn honours it:
//
//	token, lease, err := client.Acquire(c.WithContext(ctx), "job", time.Minute)
func (c *Conn) WithContext(ctx context.Context) *Conn {
	if ctx == nil {
		panic("client: WithContext with a nil Context")
	}
	return &Conn{c: c.c, ctx: ctx}
}

// Context returns the context the Conn's requests run under.
func (c *Conn) Context() context.Context { return c.ctx }

// Close closes the connection. Requests in flight fail, and push channels
// (SignalConn.Signals and the like) are closed.
func (c *Conn) Close() error {
	c.c.close(fmt.Errorf("%w: closed by the client", ErrClosed))
	return nil
}

// Done returns a channel closed when the connection has ended: closed,
// broken by an I/O error or a cancelled request, or hung up by the server.
func (c *Conn) Done() <-chan struct{} { return c.c.done }

// Err returns nil while the connection is open, and afterwards why it
// ended, as an error wrapping ErrClosed (or ErrAuth after a refused auth).
func (c *Conn) Err() error {
	c.c.mu.Lock()
	defer c.c.mu.Unlock()
	return c.c.mu.err
}

// Addr returns the address of the server the connection is talking to; in
// cluster mode it changes when a redirect is followed.
func (c *Conn) Addr() string {
	c.c.mu.Lock()
	defer c.c.mu.Unlock()
	return c.c.mu.sess.addr
}

// Do sends one request of any command and returns the reply line as the
// server wrote it (without the line end), for commands this package has
// no function for. A refused auth (error_auth) is returned as ErrAuth and
// a not-leader reply is redirected as for every other request; any other
// reply, success or not, is the caller's to read.
func (c *Conn) Do(cmd, key, arg string) (string, error) {
	return c.request(cmd, key, arg)
}

// request validates and sends one frame, and returns its reply.
func (c *Conn) request(cmd, key, arg string) (string, error) {
	if err := checkFrame(cmd, key, arg); err != nil {
		return "", err
	}
	b := make([]byte, 0, len(cmd)+len(key)+len(arg)+3)
	b = append(append(append(b, cmd...), '\n'), key...)
	b = append(append(append(b, '\n'), arg...), '\n')
	return c.c.request(c.ctx, b, blockingWait(cmd, arg))
}

// request sends frame on the current session, following not-leader
// redirects within the budget.
func (c *conn) request(ctx context.Context, frame []byte, wait time.Duration) (string, error) {
	budget := c.d.redirectBudget()
	for {
		s, err := c.session()
		if err != nil {
			return "", err
		}
		reply, err := s.roundTrip(ctx, frame, wait)
		if err != nil {
			return "", err
		}
		if reply == statusAuth {
			// The server hangs up after refusing; no need to wait for that.
			c.close(fmt.Errorf("%w (%w)", ErrClosed, ErrAuth))
			return "", ErrAuth
		}
		leader, ok := strings.CutPrefix(reply, statusNotLeader)
		if !ok || (leader != "" && leader[0] != ' ') {
			return reply, nil
		}
		leader = strings.TrimSpace(leader)
		next, ok := c.redirectTarget(s.addr, leader)
		if !ok || budget <= 0 {
			return "", &NotLeaderError{Leader: leader}
		}
		budget--
		if err := c.redirect(ctx, s, next, leader == ""); err != nil {
			return "", err
		}
	}
}

// redirectPause spaces out retries while the cluster has no known leader
// (an election is under way), so the budget is not spent in a burst.
const redirectPause = 100 * time.Millisecond

// redirectTarget picks where to resend a request refused by the member at
// from: the named leader if it is one of the members, else (leader
// unknown) the next member in the list.
func (c *conn) redirectTarget(from, leader string) (string, bool) {
	m := c.d.Members
	if leader != "" {
		for _, a := range m {
			if a == leader {
				return a, true
			}
		}
		return "", false
	}
	for i, a := range m {
		if a == from && len(m) > 1 {
			return m[(i+1)%len(m)], true
		}
	}
	if len(m) > 0 && m[0] != from {
		return m[0], true
	}
	return "", false
}

// redirect moves the connection from old to a new session at addr. When a
// concurrent request has moved it already, there is nothing to do.
func (c *conn) redirect(ctx context.Context, old *session, addr string, pause bool) error {
	c.redirectMu.Lock()
	defer c.redirectMu.Unlock()
	cur, err := c.session()
	if err != nil || cur != old {
		return err
	}
	if pause {
		t := time.NewTimer(redirectPause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	ns, err := c.d.dialSession(ctx, c, addr)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if err := c.mu.err; err != nil {
		c.mu.Unlock()
		ns.fail(err)
		return err
	}
	c.mu.sess = ns
	c.mu.Unlock()
	old.retire()
	return nil
}

func (c *conn) session() (*session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.err != nil {
		return nil, c.mu.err
	}
	return c.mu.sess, nil
}

// sessionEnded is called by a session's reader when it stops. Unless the
// session had been replaced by a redirect, the connection is over.
func (c *conn) sessionEnded(s *session) {
	s.mu.Lock()
	err := s.mu.err
	s.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.sess == s {
		c.endLocked(err)
	}
}

// close ends the connection with err and closes its socket.
func (c *conn) close(err error) {
	c.mu.Lock()
	s := c.mu.sess
	c.endLocked(err)
	c.mu.Unlock()
	if s != nil {
		s.fail(err)
	}
}

func (c *conn) endLocked(err error) {
	if c.mu.err != nil {
		return
	}
	c.mu.err = err
	close(c.done)
	for _, sinks := range c.mu.sinks {
		for _, s := range sinks {
			s.close()
		}
	}
	c.mu.sinks = nil
}

// keepAlive pings the server whenever the connection has been idle for
// every, until it ends. A dflockd server closes a connection that sends
// nothing for its read timeout (23 s by default), which would silently end
// subscriptions and idle pooled connections. Pings start only after the
// first completed request, so they never precede a caller's own auth.
func (c *conn) keepAlive(every time.Duration) {
	t := time.NewTicker(every / 2)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case now := <-t.C:
			s, err := c.session()
			if err != nil {
				return
			}
			if !s.used.Load() || !s.idleSince(now.Add(-every)) {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), every)
			// Any reply will do: servers without ping answer error but
			// still count the request as traffic.
			s.roundTrip(ctx, []byte("ping\n_\n_\n"), 0)
			cancel()
		}
	}
}
