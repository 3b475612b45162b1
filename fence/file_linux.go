//go:build linux

package fence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// stateFile is an open, flocked, mapped fence state file. After start, only
// the persister goroutine calls write.
type stateFile struct {
	path  string
	fd    int
	mem   []byte // journalSize bytes, MAP_SHARED; nil until start
	msync func(b []byte) error
}

// openStateFile opens (creating 0600) and flocks path and decodes what it
// holds. It neither writes nor extends the file.
func openStateFile(path string, opts Options) (*stateFile, state, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, state{}, fmt.Errorf("fence: open state file %s: %w", path, err)
	}
	f := &stateFile{path: path, fd: fd, msync: opts.msync}
	if f.msync == nil {
		f.msync = func(b []byte) error { return unix.Msync(b, unix.MS_SYNC) }
	}
	// The lock belongs to this open file description: a second Open, in
	// this process or another, gets EWOULDBLOCK until Close.
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, state{}, fmt.Errorf("%w: %s is locked by another process (another dflockd holds it)", ErrLocked, path)
		}
		return nil, state{}, fmt.Errorf("fence: flock state file %s: %w", path, err)
	}
	st, err := f.read()
	if err != nil {
		f.close()
		return nil, state{}, err
	}
	f.warnFilesystem(opts.Logf)
	return f, st, nil
}

// read decodes the current content; sizes above journalSize are refused
// without reading them.
func (f *stateFile) read() (state, error) {
	var fi unix.Stat_t
	if err := unix.Fstat(f.fd, &fi); err != nil {
		return state{}, fmt.Errorf("fence: stat state file %s: %w", f.path, err)
	}
	if fi.Mode&unix.S_IFMT != unix.S_IFREG {
		return state{}, fmt.Errorf("%w: %s is not a regular file", ErrCorrupt, f.path)
	}
	if fi.Size > journalSize {
		return state{}, fmt.Errorf("%w: size %d bytes, want 0, 8, 32 or 64 (state file %s)", ErrCorrupt, fi.Size, f.path)
	}
	b := make([]byte, fi.Size)
	for n := 0; n < len(b); {
		m, err := unix.Pread(f.fd, b[n:], int64(n))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return state{}, fmt.Errorf("fence: read state file %s: %w", f.path, err)
		}
		if m == 0 {
			return state{}, fmt.Errorf("fence: read state file %s: shrank while reading", f.path)
		}
		n += m
	}
	st, err := decodeState(b)
	if err != nil {
		return state{}, fmt.Errorf("%w (state file %s)", err, f.path)
	}
	return st, nil
}

// start makes first durable, then grows the file to the full 64-byte
// journal and maps it.
//
// The first record goes out with pwrite+fsync before the file is grown:
// growing first would open a crash window in which a new (or legacy) file
// is 64 bytes with no valid record, which nothing could start from again.
// Written this way, every intermediate state is one dflockd itself
// produces: 32 bytes with slot 0 valid, or 64 bytes with at least one
// valid slot. A 64-byte file gets the same treatment; pwrite and the
// mapping share the page cache.
func (f *stateFile) start(first record) error {
	if err := f.pwriteRecord(first); err != nil {
		return err
	}
	// Preallocate both slots once; the file is never shortened, so the
	// mapping never reaches past EOF (SIGBUS).
	if err := f.extend(); err != nil {
		return err
	}
	if err := unix.Fsync(f.fd); err != nil {
		return fmt.Errorf("fence: fsync state file %s: %w", f.path, err)
	}
	// A file created just now exists only once its directory entry is durable.
	if err := syncDir(filepath.Dir(f.path)); err != nil {
		return fmt.Errorf("fence: fsync directory of state file %s: %w", f.path, err)
	}
	mem, err := unix.Mmap(f.fd, 0, journalSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("fence: mmap state file %s: %w", f.path, err)
	}
	f.mem = mem
	return nil
}

// pwriteRecord writes r to its slot with pwrite and fsyncs the file. A
// legacy file's 8 bytes are overwritten by record seq 1, as dflockd does.
func (f *stateFile) pwriteRecord(r record) error {
	var b [recordSize]byte
	encodeRecord(b[:], r)
	off := int64(slotOf(r.seq) * recordSize)
	for n := 0; n < len(b); {
		m, err := unix.Pwrite(f.fd, b[n:], off+int64(n))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%w: %s: first record seq %d ceiling %d: pwrite: %w", ErrPersist, f.path, r.seq, r.ceiling, err)
		}
		n += m
	}
	if err := unix.Fsync(f.fd); err != nil {
		return fmt.Errorf("%w: %s: first record seq %d ceiling %d: fsync: %w", ErrPersist, f.path, r.seq, r.ceiling, err)
	}
	return nil
}

// extend grows the file to journalSize with allocated blocks, so later
// writeback cannot fail for lack of space. fallocate never shrinks; the
// ftruncate fallback (filesystems without fallocate) runs only to grow.
func (f *stateFile) extend() error {
	err := unix.Fallocate(f.fd, 0, 0, journalSize)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS) {
		return fmt.Errorf("fence: preallocate state file %s: %w", f.path, err)
	}
	var fi unix.Stat_t
	if err := unix.Fstat(f.fd, &fi); err != nil {
		return fmt.Errorf("fence: stat state file %s: %w", f.path, err)
	}
	if fi.Size < journalSize {
		if err := unix.Ftruncate(f.fd, journalSize); err != nil {
			return fmt.Errorf("fence: extend state file %s: %w", f.path, err)
		}
	}
	return nil
}

// write stores r in its slot of the mapping, checksum last, and msyncs.
// A fault on the mapping becomes an error instead of killing the process.
func (f *stateFile) write(r record) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(runtime.Error); !ok {
				panic(p)
			}
			err = fmt.Errorf("fault on the state file mapping (truncated or I/O error): %v", p)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	storeRecord(f.mem[slotOf(r.seq)*recordSize:][:recordSize], r)
	if err := f.msync(f.mem); err != nil {
		return fmt.Errorf("msync: %w", err)
	}
	return nil
}

// storeRecord writes r into slot (recordSize bytes of the mapping) one
// aligned word at a time with atomic stores, so neither the compiler nor
// the CPU moves the checksum ahead of the fields it covers: writeback at
// any instant sees either an invalid slot or the complete record.
func storeRecord(slot []byte, r record) {
	var b [recordSize]byte
	encodeRecord(b[:], r)
	for i := 0; i < recordSize; i += 8 {
		w := (*uint64)(unsafe.Pointer(&slot[i])) // mapping is page-aligned, slots 8-aligned
		atomic.StoreUint64(w, binary.NativeEndian.Uint64(b[i:]))
	}
}

// close unmaps, unlocks and closes; safe on a partly started file.
func (f *stateFile) close() error {
	var errs []error
	if f.mem != nil {
		errs = append(errs, unix.Munmap(f.mem))
		f.mem = nil
	}
	errs = append(errs, unix.Flock(f.fd, unix.LOCK_UN), unix.Close(f.fd))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("fence: closing state file %s: %w", f.path, err)
	}
	return nil
}

// warnFilesystem flags filesystems on which the guarantees do not hold.
func (f *stateFile) warnFilesystem(logf func(string, ...any)) {
	var fs unix.Statfs_t
	if unix.Fstatfs(f.fd, &fs) != nil {
		return
	}
	switch fs.Type {
	case unix.TMPFS_MAGIC, unix.RAMFS_MAGIC:
		logf("fence: state file %s is on a RAM filesystem: fences stay monotonic across crashes but not across reboots", f.path)
	case unix.NFS_SUPER_MAGIC:
		logf("fence: state file %s is on NFS, where mmap writeback is not reliable; use a local filesystem", f.path)
	}
}

func syncDir(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	err = unix.Fsync(fd)
	return errors.Join(err, unix.Close(fd))
}
