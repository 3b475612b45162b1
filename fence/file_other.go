//go:build !linux

package fence

import "fmt"

// Durable state files need mmap, flock and msync as Linux provides them;
// elsewhere only NewVolatile works and Open fails with ErrUnsupported.

type stateFile struct{}

func openStateFile(path string, _ Options) (*stateFile, state, error) {
	return nil, state{}, fmt.Errorf("%w: %s", ErrUnsupported, path)
}

func (f *stateFile) start(record) error { return ErrUnsupported }
func (f *stateFile) write(record) error { return ErrUnsupported }
func (f *stateFile) close() error       { return nil }
