package cluster

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"golang.org/x/sys/unix"
)

// Storage is a node's durable state under --raft-dir: the raft log and
// stable store (raft-wal, one fsync per appended batch of entries) in
// wal/, snapshots (raft's file store, the two newest kept) in snapshots/,
// and a LOCK file that keeps a second process off the same directory.
type Storage struct {
	Logs  *wal.WAL
	Snaps *raft.FileSnapshotStore
	lock  *os.File
}

// OpenStorage opens (creating) the storage in dir.
func OpenStorage(dir string, logOutput io.Writer) (*Storage, error) {
	if err := os.MkdirAll(filepath.Join(dir, "wal"), 0o700); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("%s is in use by another process: %w", dir, err)
	}
	logs, err := wal.Open(filepath.Join(dir, "wal"))
	if err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("raft log in %s: %w", dir, err)
	}
	snaps, err := raft.NewFileSnapshotStore(dir, 2, logOutput)
	if err != nil {
		_ = logs.Close()
		_ = lock.Close()
		return nil, fmt.Errorf("snapshots in %s: %w", dir, err)
	}
	return &Storage{Logs: logs, Snaps: snaps, lock: lock}, nil
}

// Close closes the log and releases the directory.
func (s *Storage) Close() error {
	err := s.Logs.Close()
	_ = s.lock.Close()
	return err
}
