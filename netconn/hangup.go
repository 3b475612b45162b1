package netconn

import "net"

// Hangup closes the open connections that match approves (nil: every
// one), each once the results already posted to it are delivered and its
// queued output is sent, as if its session had closed it: a cluster
// member that stops leading hangs up on its clients after their pending
// requests were answered error_not_leader, so that clients which do not
// follow redirects reconnect (cmd/dflockd, --cluster-forward).
//
// match is called with the net.Conn the listener returned, under the
// server's lock: it must be quick and must not call back into the
// server. A connection still in its TLS handshake is closed once the
// handshake ends. Hangup reports how many connections it asked to close;
// it does not wait for them. Any goroutine.
func (s *Server) Hangup(match func(net.Conn) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.mu.conns {
		if match == nil || match(c.raw) {
			c.notify(evHangup)
			n++
		}
	}
	return n
}
