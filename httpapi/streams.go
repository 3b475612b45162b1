package httpapi

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
)

// What the two SSE routes (/v1/events, /v1/signals) share: how many
// streams each admits (streamSlots), and how a reader that takes nothing
// is found and cut (peerProbe, at each keep-alive ping), so that streams
// nobody reads do not hold the route's places for ever on a quiet server,
// where no event comes to show that they are stuck.

// defaultMaxStreamsPerIP is a client address's share of a route's
// maxStreams: a few /ui tabs and a few listeners. It takes eight
// addresses, not one, to fill a route.
const defaultMaxStreamsPerIP = 8

// streamSlots counts one route's open streams, in all (at most
// maxStreams) and per client IP address (at most perIP; 0: no cap).
type streamSlots struct {
	perIP int
	mu    struct {
		sync.Mutex
		total int
		byIP  map[netip.Addr]int
	}
}

// take reserves a place for a stream of a client at ip. ok is false when
// the route is full; perIP then tells whether ip's share is what is full.
func (s *streamSlots) take(ip netip.Addr) (ok, perIP bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.perIP > 0 && ip.IsValid() && s.mu.byIP[ip] >= s.perIP {
		return false, true
	}
	if s.mu.total >= maxStreams {
		return false, false
	}
	s.mu.total++
	if ip.IsValid() {
		if s.mu.byIP == nil {
			s.mu.byIP = make(map[netip.Addr]int)
		}
		s.mu.byIP[ip]++
	}
	return true, false
}

// give frees the place take reserved for ip.
func (s *streamSlots) give(ip netip.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.total--
	if ip.IsValid() {
		if n := s.mu.byIP[ip] - 1; n > 0 {
			s.mu.byIP[ip] = n
		} else {
			delete(s.mu.byIP, ip) // only addresses with streams
		}
	}
}

// open reports the streams open on the route.
func (s *streamSlots) open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.total
}

// refuseStream answers a stream that take refused: 503, max_streams_per_ip
// for an address's share, unavailable for the route's whole.
func (a *API) refuseStream(w http.ResponseWriter, what string, perIP bool) {
	if perIP {
		writeError(w, http.StatusServiceUnavailable, codeMaxStreamsPerIP,
			strconv.Itoa(a.streamsPerIP)+" "+what+" streams are open from this address (--http-max-streams-per-ip)")
		return
	}
	writeError(w, http.StatusServiceUnavailable, codeUnavailable, "too many "+what+" streams are open")
}

// connKey is the context key of a request's connection (ConnContext).
type connKey struct{}

// socketOf is the socket under a served connection, through TLS and the
// per-IP cap's wrapper; nil when there is none to ask.
func socketOf(c net.Conn) syscall.RawConn {
	for {
		switch v := c.(type) {
		case *tls.Conn:
			c = v.NetConn()
		case *capConn:
			c = v.Conn
		case syscall.Conn:
			rc, err := v.SyscallConn()
			if err != nil {
				return nil
			}
			return rc
		default:
			return nil
		}
	}
}
