//go:build !linux

package loop

// readPauser cannot pause reading outside Linux (see pause_linux.go): a
// connection whose output passes the bound is closed once its buffered
// input or output reaches the hard bound instead.
type readPauser struct{ notGnet int }

func (p *readPauser) pause(int, bool) bool { return false }
func (p *readPauser) resume(int, bool)     {}
