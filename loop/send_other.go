//go:build !linux

package loop

// send writes b to the connection's socket through gnet.
func (cs *conn) send(b []byte) { _, _ = cs.c.Write(b) }
