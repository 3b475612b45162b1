// Package conncap admits client connections under --max-connections and
// --max-connections-per-ip (spec §D.1): one Limiter shared by every
// listener of a server (gnet, TLS), so the caps count connections, not
// connections per listener.
package conncap

import (
	"net"
	"net/netip"
	"sync"
)

// Limiter counts open connections, in total and per client IP address.
// The zero value admits everything; a Max or PerIP of 0 is no limit.
type Limiter struct {
	Max   int
	PerIP int

	mu    sync.Mutex
	total int
	perIP map[netip.Addr]int
}

// Admit reserves a place for a connection from remote, or reports false
// when a cap is reached (the caller closes the connection without a
// reply). Every admitted connection must be released once with Release.
func (l *Limiter) Admit(remote net.Addr) bool {
	ip := addrOf(remote)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Max > 0 && l.total >= l.Max {
		return false
	}
	if l.PerIP > 0 && ip.IsValid() {
		if l.perIP[ip] >= l.PerIP {
			return false
		}
		if l.perIP == nil {
			l.perIP = make(map[netip.Addr]int)
		}
		l.perIP[ip]++
	}
	l.total++
	return true
}

// Release frees the place of an admitted connection from remote.
func (l *Limiter) Release(remote net.Addr) {
	ip := addrOf(remote)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.PerIP > 0 && ip.IsValid() {
		if n := l.perIP[ip] - 1; n > 0 {
			l.perIP[ip] = n
		} else {
			delete(l.perIP, ip) // the map holds only addresses with connections
		}
	}
}

// Open reports the admitted connections.
func (l *Limiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// addrOf is the client IP of remote, IPv4-mapped IPv6 unmapped so one
// client counts once whichever way it connects.
func addrOf(remote net.Addr) netip.Addr {
	if ta, ok := remote.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(ta.IP); ok {
			return ip.Unmap()
		}
	}
	if ap, err := netip.ParseAddrPort(remote.String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}
