//go:build !linux

package loop

import (
	"errors"

	"github.com/panjf2000/gnet/v2"
)

// closeListener is Linux-only (see listener_linux.go); elsewhere a
// draining server goes on accepting and closes new connections at once.
func closeListener(gnet.Engine, string) error {
	return errors.New("loop: closing a listener during a drain needs Linux")
}
