//go:build linux

package loop

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// send writes b to the connection's socket.
//
// With nothing queued ahead of it, that is one raw write(2). The socket
// is non-blocking, so the call cannot block, and making it without
// telling the Go scheduler (RawSyscall skips entersyscall/exitsyscall)
// keeps the loop's P from looking blocked in a system call. A loop spends
// much of its time in write(2), which on loopback also runs the peer's
// receive path; seen there, its P is handed off by sysmon, which then
// polls every 20 µs. On one CPU that cost a tenth of the server's time.
//
// Whatever the socket does not take, an error included, goes through
// gnet's Write, exactly as before: it queues the rest and waits for the
// socket to drain (EAGAIN, a short write), or closes the connection.
func (cs *conn) send(b []byte) {
	if len(b) > 0 && !cs.closed && cs.c.OutboundBuffered() == 0 {
		n, _, errno := unix.RawSyscall(unix.SYS_WRITE, uintptr(cs.c.Fd()), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if errno == 0 {
			if int(n) == len(b) {
				return
			}
			b = b[n:]
		}
	}
	_, _ = cs.c.Write(b)
}
