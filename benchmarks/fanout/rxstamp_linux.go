package fanout

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rxConn reads a TCP socket together with the kernel's receive timestamp
// of the data (SO_TIMESTAMPNS): when the server's push reached this
// socket, whatever the reading goroutine was doing then.
type rxConn struct {
	rc  syscall.RawConn
	oob []byte
}

func newRxConn(nc *net.TCPConn) (*rxConn, error) {
	rc, err := nc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return nil, err
	}
	if serr != nil {
		return nil, fmt.Errorf("fanout: SO_TIMESTAMPNS: %w", serr)
	}
	return &rxConn{rc: rc, oob: make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{}))))}, nil
}

// read reads into b. stamp is the receive time (Unix ns) of the last
// segment read, or 0 when the kernel attached none.
func (c *rxConn) read(b []byte) (n int, stamp int64, err error) {
	var oobn int
	var rerr error
	err = c.rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), b, c.oob, 0)
		return rerr != unix.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return 0, 0, err
	}
	if n == 0 {
		return 0, 0, io.EOF
	}
	return n, rxStamp(c.oob[:oobn]), nil
}

// rxStamp finds the SCM_TIMESTAMPNS message in oob, without the
// allocations of unix.ParseSocketControlMessage (a read per push per
// subscriber).
func rxStamp(oob []byte) int64 {
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		if h.Len < unix.SizeofCmsghdr || int(h.Len) > len(oob) {
			return 0
		}
		data := oob[unix.CmsgLen(0):h.Len]
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && len(data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&data[0]))
			return ts.Nano()
		}
		next := unix.CmsgSpace(int(h.Len) - unix.CmsgLen(0))
		if next > len(oob) {
			return 0
		}
		oob = oob[next:]
	}
	return 0
}

// dialSlow connects with a small receive buffer, set before the
// handshake so the advertised window is small from the start.
func dialSlow(addr string, rcvBuf int) (net.Conn, error) {
	d := net.Dialer{Control: func(network, address string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, rcvBuf)
		}); err != nil {
			return err
		}
		return serr
	}}
	return d.Dial("tcp", addr)
}

// fileLimit is the soft RLIMIT_NOFILE of this process.
func fileLimit() (uint64, error) {
	var l unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &l); err != nil {
		return 0, err
	}
	return l.Cur, nil
}

// isReset reports a connection reset by the peer.
func isReset(err error) bool { return errors.Is(err, unix.ECONNRESET) }
