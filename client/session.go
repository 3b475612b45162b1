package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxReply bounds one reply line: stats and lrange JSON grow with the
// server's contents, but a peer that never sends LF must not exhaust
// memory.
const maxReply = 16 << 20

// call is one request waiting for its reply line.
type call struct {
	reply string
	err   error
	done  chan struct{} // closed once reply or err is set
}

// session is one network connection. Requests are pipelined: a sender
// appends its call to pending and writes its frame under wmu, so the
// pending order is the wire order, and the reader goroutine hands each
// reply line to the oldest pending call. Push lines go to the owning
// conn's sinks instead.
type session struct {
	c    *conn
	nc   net.Conn
	addr string
	br   *bufio.Reader

	wmu      sync.Mutex   // orders appends to pending with frame writes
	lastSend atomic.Int64 // unix nanoseconds of the last frame written
	used     atomic.Bool  // a request has completed: keepalives may start

	mu struct {
		sync.Mutex
		pending []*call
		ready   time.Time // when the last pending call may be answered at the latest, before slack
		err     error     // why the session ended; nil while usable
		retired bool      // replaced after a redirect: close once pending drains
	}
}

func newSession(c *conn, nc net.Conn, addr string) *session {
	s := &session{c: c, nc: nc, addr: addr, br: bufio.NewReader(nc)}
	go s.readLoop()
	return s
}

// roundTrip writes frame and waits for its reply line. wait is how long
// the server may legitimately hold the reply back (a blocking request's
// timeout); with a reply timeout configured the session is given up once
// the reply is later than that plus the timeout. Cancelling ctx gives the
// session up too: the protocol cannot withdraw a request, and a reply
// arriving later (say, a grant) must not be mistaken for the next one.
func (s *session) roundTrip(ctx context.Context, frame []byte, wait time.Duration) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	cl := &call{done: make(chan struct{})}
	var deadline time.Time
	s.wmu.Lock()
	s.mu.Lock()
	if err := s.mu.err; err != nil {
		s.mu.Unlock()
		s.wmu.Unlock()
		return "", err
	}
	s.mu.pending = append(s.mu.pending, cl)
	// A pipelined reply comes after the replies before it, so its
	// deadline counts from when the previous one is due.
	now := time.Now()
	start := s.mu.ready
	if start.Before(now) {
		start = now
	}
	s.mu.ready = start.Add(wait)
	if rt := s.c.d.ReplyTimeout; rt > 0 {
		deadline = s.mu.ready.Add(rt)
	}
	s.mu.Unlock()
	stop := context.AfterFunc(ctx, func() { s.fail(fmt.Errorf("%w: request cancelled", ErrClosed)) })
	_, werr := s.nc.Write(frame)
	s.lastSend.Store(now.UnixNano())
	s.wmu.Unlock()
	if werr != nil {
		s.fail(fmt.Errorf("%w: %w", ErrClosed, werr))
	}
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-cl.done:
		case <-t.C:
			s.fail(fmt.Errorf("%w: no reply within the reply timeout", ErrClosed))
			<-cl.done
		}
		t.Stop()
	} else {
		<-cl.done
	}
	stop()
	if cl.err != nil {
		if err := ctx.Err(); err != nil {
			return "", err // the cause, not the close it led to
		}
		return "", cl.err
	}
	s.used.Store(true)
	return cl.reply, nil
}

// fail ends the session with err: the socket is closed and every pending
// call fails. Only the first call has an effect.
func (s *session) fail(err error) {
	s.mu.Lock()
	if s.mu.err != nil {
		s.mu.Unlock()
		return
	}
	s.mu.err = err
	pending := s.mu.pending
	s.mu.pending = nil
	s.mu.Unlock()
	s.nc.Close()
	for _, cl := range pending {
		cl.err = err
		close(cl.done)
	}
}

// retire closes the session once the replies still owed to it have come
// in: those requests may themselves be redirected and must see their
// replies.
func (s *session) retire() {
	s.mu.Lock()
	s.mu.retired = true
	idle := len(s.mu.pending) == 0
	s.mu.Unlock()
	if idle {
		s.fail(fmt.Errorf("%w: replaced after a redirect", ErrClosed))
	}
}

// err is why the session ended, or nil.
func (s *session) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.err
}

// idleSince reports whether nothing is pending and no frame was written
// after t.
func (s *session) idleSince(t time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.err == nil && len(s.mu.pending) == 0 && s.lastSend.Load() < t.UnixNano()
}

func (s *session) readLoop() {
	for {
		line, err := s.readLine()
		if err != nil {
			s.fail(fmt.Errorf("%w: %w", ErrClosed, err))
			break
		}
		if kind, a, b, ok := parsePush(line); ok {
			s.c.deliver(kind, a, b)
			continue
		}
		s.mu.Lock()
		if len(s.mu.pending) == 0 {
			s.mu.Unlock()
			s.fail(fmt.Errorf("%w: %q with no request outstanding", ErrProtocol, line))
			break
		}
		cl := s.mu.pending[0]
		s.mu.pending[0] = nil
		s.mu.pending = s.mu.pending[1:]
		drained := s.mu.retired && len(s.mu.pending) == 0
		s.mu.Unlock()
		cl.reply = line
		close(cl.done)
		if drained {
			s.fail(fmt.Errorf("%w: replaced after a redirect", ErrClosed))
			break
		}
	}
	s.c.sessionEnded(s)
}

// readLine reads one line without its LF and a trailing CR.
func (s *session) readLine() (string, error) {
	frag, err := s.br.ReadSlice('\n')
	if err == nil {
		return trimCR(string(frag[:len(frag)-1])), nil
	}
	line := append([]byte(nil), frag...)
	for errors.Is(err, bufio.ErrBufferFull) {
		if len(line) > maxReply {
			return "", fmt.Errorf("%w: reply longer than %d bytes", ErrProtocol, maxReply)
		}
		frag, err = s.br.ReadSlice('\n')
		line = append(line, frag...)
	}
	if err != nil {
		return "", err
	}
	return trimCR(string(line[:len(line)-1])), nil
}

func trimCR(s string) string { return strings.TrimSuffix(s, "\r") }

// Push kinds: the first word of an asynchronous line. None of them is a
// reply status, which is how the reader tells pushes from replies.
const (
	pushSignal = "sig"
	pushWatch  = "watch"
	pushLeader = "leader"
)

// parsePush splits "sig <channel> <payload>", "watch <event> <key>" and
// "leader <event> <key>"; the last field keeps its spaces.
func parsePush(line string) (kind, a, b string, ok bool) {
	kind, rest, found := strings.Cut(line, " ")
	if !found || (kind != pushSignal && kind != pushWatch && kind != pushLeader) {
		return "", "", "", false
	}
	a, b, _ = strings.Cut(rest, " ")
	return kind, a, b, true
}
