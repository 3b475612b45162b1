package httpapi

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// peerProbe finds a stream's reader that takes nothing: a peer gone
// without a word (no FIN or reset reaches the server: a host or a path
// that died), or one that stopped reading and whose receive window is
// full. Either way what the server sent stays unacknowledged, which
// TCP_INFO shows. Right after each keep-alive ping is written, the probe
// notes the bytes acknowledged so far and whether some still wait; at the
// next ping, a peer that had bytes waiting and has acknowledged none
// since took nothing for a whole ping period, and its stream is cut. A
// reader alive at the TCP level acknowledges a ping within a round trip,
// whether its application reads or not, until its window fills.
//
// A peer whose kernel still takes data cannot be told from a reader: the
// per-address cap (streamSlots) bounds what such streams hold.
type peerProbe struct {
	sock    syscall.RawConn // nil: nothing to ask, never stalled
	acked   uint64          // tcpi_bytes_acked after the last ping
	waiting bool            // bytes were unacknowledged then
}

func newPeerProbe(sock syscall.RawConn) *peerProbe { return &peerProbe{sock: sock} }

// read returns the bytes acknowledged so far and whether any wait.
func (p *peerProbe) read() (acked uint64, waiting, ok bool) {
	if p == nil || p.sock == nil {
		return 0, false, false
	}
	var info *unix.TCPInfo
	var err error
	if cerr := p.sock.Control(func(fd uintptr) {
		info, err = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); cerr != nil || err != nil {
		return 0, false, false
	}
	return info.Bytes_acked, info.Unacked > 0 || info.Notsent_bytes > 0, true
}

// mark notes the state right after a ping was written.
func (p *peerProbe) mark() {
	if acked, waiting, ok := p.read(); ok {
		p.acked, p.waiting = acked, waiting
	}
}

// stalled reports a peer that acknowledged nothing since the last mark
// while bytes waited for it.
func (p *peerProbe) stalled() bool {
	acked, _, ok := p.read()
	return ok && p.waiting && acked == p.acked
}
