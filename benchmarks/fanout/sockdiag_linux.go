package fanout

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// sockWatch tells whether the server still holds its end of a loopback
// connection open, by asking the kernel (sock_diag) for the state of the
// server's socket. A never-reading client cannot see the server's close
// itself: the FIN waits behind the data it does not read.
type sockWatch struct {
	fd  int
	req []byte
	buf []byte
}

// Sizes of the sock_diag structures (linux/inet_diag.h).
const (
	nlmsgHdrLen      = 16
	inetDiagSockID   = 48 // sport, dport, src[4], dst[4], if, cookie[2]
	inetDiagReqLen   = 8 + inetDiagSockID
	inetDiagNoCookie = 0xffffffff
	tcpEstablished   = 1
	tcpListen        = 10
)

// newSockWatch watches the server's end of c, a connection to a server on
// this host: the socket bound to c's remote address and connected to c's
// local one.
func newSockWatch(c net.Conn) (*sockWatch, error) {
	local, ok1 := c.RemoteAddr().(*net.TCPAddr) // the server's end
	remote, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("fanout: sock_diag: not a TCP connection")
	}
	family, alen := uint8(unix.AF_INET6), 16
	if local.IP.To4() != nil && remote.IP.To4() != nil {
		family, alen = unix.AF_INET, 4
	}
	ip := func(a *net.TCPAddr) []byte {
		if alen == 4 {
			return a.IP.To4()
		}
		return a.IP.To16()
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, fmt.Errorf("fanout: sock_diag: %w", err)
	}
	req := make([]byte, nlmsgHdrLen+inetDiagReqLen)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	r := req[nlmsgHdrLen:]
	r[0], r[1] = family, unix.IPPROTO_TCP
	ne.PutUint32(r[4:], 0xffffffff) // every state
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], uint16(local.Port))
	binary.BigEndian.PutUint16(id[2:], uint16(remote.Port))
	copy(id[4:20], ip(local))
	copy(id[20:36], ip(remote))
	ne.PutUint32(id[40:], inetDiagNoCookie)
	ne.PutUint32(id[44:], inetDiagNoCookie)
	return &sockWatch{fd: fd, req: req, buf: make([]byte, 4096)}, nil
}

// exists reports whether the kernel has the server's socket in any state
// (TIME_WAIT included).
func (w *sockWatch) exists() (bool, error) {
	_, found, err := w.state()
	return found, err
}

// open reports whether the server's socket is still ESTABLISHED: after
// the server's close it is in FIN_WAIT1 (its unsent data still queued) or
// gone.
func (w *sockWatch) open() (bool, error) {
	state, found, err := w.state()
	return found && state == tcpEstablished, err
}

// state asks for the server's socket: its TCP state, or found false when
// the kernel has none.
func (w *sockWatch) state() (state byte, found bool, err error) {
	if err := unix.Sendto(w.fd, w.req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, false, fmt.Errorf("fanout: sock_diag: %w", err)
	}
	n, _, err := unix.Recvfrom(w.fd, w.buf, 0)
	if err != nil {
		return 0, false, fmt.Errorf("fanout: sock_diag: %w", err)
	}
	if n < nlmsgHdrLen+4 {
		return 0, false, fmt.Errorf("fanout: sock_diag: short answer (%d bytes)", n)
	}
	ne := binary.NativeEndian
	switch typ := ne.Uint16(w.buf[4:]); typ {
	case unix.NLMSG_ERROR:
		errno := -int32(ne.Uint32(w.buf[nlmsgHdrLen:]))
		if unix.Errno(errno) == unix.ENOENT {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("fanout: sock_diag: %w", unix.Errno(errno))
	case unix.SOCK_DIAG_BY_FAMILY:
		// inet_diag_msg: family, state, timer, retrans, then the id. The
		// kernel's lookup falls back to the listener on the server's port
		// when the connection's own socket is gone: that one is not it.
		msg := w.buf[nlmsgHdrLen:n]
		if len(msg) < 4+inetDiagSockID {
			return 0, false, fmt.Errorf("fanout: sock_diag: short answer (%d bytes)", n)
		}
		if msg[1] == tcpListen || !bytes.Equal(msg[4:8], w.req[nlmsgHdrLen+8:nlmsgHdrLen+12]) {
			return 0, false, nil
		}
		return msg[1], true, nil
	default:
		return 0, false, fmt.Errorf("fanout: sock_diag: answer of type %d", typ)
	}
}

func (w *sockWatch) close() { _ = unix.Close(w.fd) }
