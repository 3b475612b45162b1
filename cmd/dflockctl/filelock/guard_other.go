//go:build !linux

package filelock

import (
	"errors"
	"os"
)

var errContended = errors.New("filelock: lock file is being changed by another process")

// guardRemoval is a no-op off Linux: removal then follows the plain
// protocol, and two processes removing the same stale file at the same
// moment may both succeed.
func guardRemoval(*os.File) error { return nil }
