package filelock

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// guardSpins × 1 ms is how long guardRemoval waits for another remover: the
// guard is only ever held across a stat, a read of a tiny file and an
// unlink, so anything longer means a peer uses flock for something else.
const guardSpins = 50

// errContended: another process keeps the file's flock.
var errContended = errors.New("filelock: lock file is being changed by another process")

// guardRemoval takes an exclusive flock(2) on f, released when f is closed.
// Every remover in this package holds it from "is this still the file I
// read?" to the unlink, which is what makes removal of a stale file happen
// at most once. File systems without flock support degrade to the plain
// protocol.
func guardRemoval(f *os.File) error {
	fd := int(f.Fd())
	for i := 0; ; i++ {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			if i >= guardSpins {
				return errContended
			}
			time.Sleep(time.Millisecond)
		case errors.Is(err, syscall.ENOLCK), errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.EINVAL):
			return nil
		default:
			return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
	}
}
