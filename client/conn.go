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

	moving chan struct{} // holds a token while a request moves the connection (move)

	// fenced: whether the server's tokens begin with their fence
	// (tokensCarryFences): 0 not asked yet, fencedYes, fencedNo.
	fenced atomic.Int32

	mu struct {
		sync.Mutex
		sess      *session // the server connection in use
		replacing *session // sess, while move looks for its successor
		err       error    // why the connection ended; nil while open
		sinks     map[string][]pushSink
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

// request sends frame on the current session. In cluster mode a
// not-leader reply moves the connection to the leader (see leaderSearch)
// and the frame is sent again there; otherwise it is a *NotLeaderError.
func (c *conn) request(ctx context.Context, frame []byte, wait time.Duration) (string, error) {
	var ls *leaderSearch // made at the first refusal
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
		leader, refused := notLeaderReply(reply)
		if !refused {
			return reply, nil
		}
		if !c.d.clusterMode() {
			return "", &NotLeaderError{Leader: leader}
		}
		if ls == nil {
			ls = c.d.newSearch()
		}
		next, err := ls.notLeader(ctx, c.done, s.addr, leader)
		if err != nil {
			return "", err
		}
		if next == s.addr {
			continue // a member taking over, asked again on the same session
		}
		if err := c.move(ctx, s, next, ls); err != nil {
			return "", err
		}
	}
}

// notLeaderReply reports whether reply is error_not_leader, and the
// leader it names ("" when the member knows none).
func notLeaderReply(reply string) (leader string, ok bool) {
	leader, ok = strings.CutPrefix(reply, statusNotLeader)
	if !ok || (leader != "" && leader[0] != ' ') {
		return "", false
	}
	return strings.TrimSpace(leader), true
}

func (c *conn) session() (*session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.err != nil {
		return nil, c.mu.err
	}
	return c.mu.sess, nil
}

// install makes s the session in use.
func (c *conn) install(s *session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.installLocked(s)
}

// installLocked makes s the session in use. A session that ended before
// (its member died right after the dial) ended while it was not in use,
// unnoticed by sessionEnded: it ends the connection now. Lock order:
// c.mu, then a session's mu, never the other way round.
func (c *conn) installLocked(s *session) {
	c.mu.sess = s
	if err := s.err(); err != nil {
		c.endLocked(err)
	}
}

// err is why the connection ended, or nil.
func (c *conn) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.err
}

// sessionEnded is called by a session's reader when it stops. Unless the
// session had been replaced by a redirect, or is being replaced (move
// ends the connection itself if that fails), the connection is over.
func (c *conn) sessionEnded(s *session) {
	err := s.err()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.sess == s && c.mu.replacing != s {
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
