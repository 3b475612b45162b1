package loop

import (
	"net"
	"sync"

	"github.com/dflockd-ng/dflockd/session"
)

// accepted is a connection's gnet context from its accept to OnOpen: the
// protocol of its listener, and the connection as accepted, a wrapper of
// the socket gnet serves if wrapped (closed with the connection).
type accepted struct {
	proto   session.Protocol
	raw     net.Conn
	wrapped bool
}

// openConns is the server's open connections, for Hangup.
type openConns struct {
	mu sync.Mutex
	m  map[*conn]struct{}
}

func (o *openConns) add(cs *conn) {
	o.mu.Lock()
	if o.m == nil {
		o.m = make(map[*conn]struct{})
	}
	o.m[cs] = struct{}{}
	o.mu.Unlock()
}

func (o *openConns) remove(cs *conn) {
	o.mu.Lock()
	delete(o.m, cs)
	o.mu.Unlock()
}

// abortAfterlives closes the sockets still written in an afterlife
// (afterlife.go), once the loops have stopped.
func (o *openConns) abortAfterlives() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for cs := range o.m {
		if cs.after != nil {
			cs.after.abort()
		}
	}
}

// Hangup closes the open connections that match approves (nil: every
// one), each once the results already posted to it are delivered and its
// queued output is sent, as if its session had closed it: a cluster
// member that stops leading hangs up on its clients after their pending
// requests were answered error_not_leader, so that clients which do not
// follow redirects reconnect (cmd/dflockd, --cluster-forward). match is
// called with the net.Conn the listener returned, under the server's
// lock: it must be quick and must not call back into the server. Hangup
// reports how many connections it asked to close; it does not wait for
// them. Any goroutine.
func (s *Server) Hangup(match func(net.Conn) bool) int {
	s.open.mu.Lock()
	defer s.open.mu.Unlock()
	n := 0
	for cs := range s.open.m {
		if match == nil || match(cs.raw) {
			cs.lp.push(delivery{cs: cs, kind: deliverHangup})
			n++
		}
	}
	return n
}
