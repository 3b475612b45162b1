package loop

import "github.com/dflockd-ng/dflockd/internal/gnetwrite"

// send writes b to the connection's socket (gnetwrite: a raw write(2)
// when nothing is queued). Once the connection is closed, its descriptor
// may be another connection's: only gnet's Write, which knows, may see it.
func (cs *conn) send(b []byte) {
	if cs.after != nil {
		cs.after.write(b) // dropped once closed
		return
	}
	if cs.closed {
		_, _ = cs.c.Write(b)
		return
	}
	gnetwrite.Write(cs.c, b)
}
