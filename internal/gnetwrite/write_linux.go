//go:build linux

package gnetwrite

import (
	"unsafe"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// Write writes b to c. With nothing queued ahead of it, that is one raw
// write(2) on c's socket. Whatever the socket does not take, an error
// included, goes through c.Write exactly as before: gnet queues the rest
// and waits for the socket to drain (EAGAIN, a short write), or meets the
// error itself and closes the connection.
//
// Only for an open connection, on its event loop: once gnet has closed
// c, its descriptor may already belong to another connection.
func Write(c gnet.Conn, b []byte) {
	if len(b) > 0 && c.OutboundBuffered() == 0 {
		n, _, errno := unix.RawSyscall(unix.SYS_WRITE, uintptr(c.Fd()), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if errno == 0 {
			if int(n) == len(b) {
				return
			}
			b = b[n:]
		}
	}
	_, _ = c.Write(b)
}
