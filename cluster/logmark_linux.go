//go:build linux

package cluster

import (
	"os"

	"golang.org/x/sys/unix"
)

// The mark is written through a shared mapping of its file, not write(2):
// a write(2) updates the file's mtime, a metadata change that the next
// journal commit carries, and ext4 (data=ordered) writes a file's dirty
// data before a commit that holds its inode: the log's every fsync would
// then flush the mark as well, a second flush per append. A store into a
// page already dirty changes no metadata; the page reaches the disk with
// the writeback or the next flush, and the page cache, which a crash of
// the process does not lose, has it at once.

// store copies b into the file at off.
func (m *markFile) store(off int64, b []byte) error {
	if m.mem == nil {
		fi, err := m.f.Stat()
		if err != nil {
			return err
		}
		if fi.Size() < 2*markSlot {
			// A file cut short (create writes both slots): the mapping
			// must not reach past its end.
			if err := m.f.Truncate(2 * markSlot); err != nil {
				return err
			}
		}
		mem, err := unix.Mmap(int(m.f.Fd()), 0, 2*markSlot, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return err
		}
		m.mem = mem
	}
	copy(m.mem[off:off+int64(len(b))], b)
	return nil
}

// flush makes what store wrote durable (msync with MS_SYNC: the file's
// size and blocks never change after create, so only data is written, as
// with fdatasync).
func (m *markFile) flush() error {
	if m.mem == nil {
		return datasync(m.f)
	}
	for {
		err := unix.Msync(m.mem, unix.MS_SYNC)
		if err != unix.EINTR {
			return err
		}
	}
}

// unmap releases the mapping.
func (m *markFile) unmap() {
	if m.mem != nil {
		_ = unix.Munmap(m.mem)
		m.mem = nil
	}
}

// datasync flushes f's data (fdatasync): the mark file's size and blocks
// are fixed at creation, so the inode need not be written (its mtime
// alone is not flushed), which keeps the sync as cheap as the disk allows.
func datasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

// writeOut starts the write of the mark's dirty page to the device and
// waits for it, without asking the device to flush its cache (see
// markedLog: the log's next fsync does). It is safe beside store: a
// record torn by a store during the write fails its CRC, and the other
// slot holds the record before it.
func (m *markFile) writeOut() error {
	const flags = unix.SYNC_FILE_RANGE_WAIT_BEFORE | unix.SYNC_FILE_RANGE_WRITE | unix.SYNC_FILE_RANGE_WAIT_AFTER
	for {
		err := unix.SyncFileRange(int(m.f.Fd()), 0, 2*markSlot, flags)
		if err != unix.EINTR {
			return err
		}
	}
}
