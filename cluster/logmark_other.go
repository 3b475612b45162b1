//go:build !linux

package cluster

import "os"

// store writes b into the file at off.
func (m *markFile) store(off int64, b []byte) error {
	_, err := m.f.WriteAt(b, off)
	return err
}

// flush makes what store wrote durable.
func (m *markFile) flush() error { return datasync(m.f) }

func (m *markFile) unmap() {}

// writeOut makes the mark durable: without sync_file_range, a flush of
// its own.
func (m *markFile) writeOut() error { return datasync(m.f) }

// datasync falls back to fsync where fdatasync is not available.
func datasync(f *os.File) error { return f.Sync() }
