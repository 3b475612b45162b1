package cluster

import (
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
)

// markedLog is a member's raft LogStore: the WAL, with the mark file
// (logmark.go) kept so that whatever raft is told is stored, the mark
// says so too.
//
// After every append that the WAL has made durable, StoreLogs records
// stored = its last index in the mark, without a sync: a pwrite into the
// page cache, which a process crash (SIGKILL, a panic, the OOM killer)
// does not lose. So after any crash of the process, a log that ends
// before what raft was told is stored is told, whatever the disk did to
// the log.
//
// Against a power cut the mark is made durable too, at most every
// markSyncEvery: that append writes the record (stored = the previous
// append's last index, writing = this one's) and fdatasyncs it on the
// mark's own goroutine while the WAL appends and syncs. An fdatasync per
// append would cost what a second log costs (this VM's disk serialises
// the two flushes: 18-45 % of a cluster's throughput, measured); one per
// interval costs a few per second. What the disk then guarantees after a
// power cut: every entry up to the durable record's stored was
// acknowledged; entries after it may be missing unnoticed, as raft-wal
// drops a last batch whose write was torn. So a power cut that also
// loses the disk's copy of appends acknowledged in the last interval goes
// unnoticed; any loss reaching further back is told.
//
// A tail deletion (raft dropping a follower's conflicting suffix) lowers
// the mark durably before the WAL deletes anything; so does deleting the
// whole log (raft does, after installing a snapshot that covers it:
// lowering is always safe, it only weakens the check until the next
// append). Head deletions (compaction behind a snapshot) leave it alone.
//
// Raft calls StoreLogs and DeleteRange from its main goroutine only; the
// mutex makes the store safe for any caller anyway.
type markedLog struct {
	wal *wal.WAL

	mu struct {
		sync.Mutex
		mark   *markFile
		acked  uint64 // last index of the last append that returned nil
		owed   uint64 // recovering: the index to reach again (mark.owed)
		closed bool
		synced time.Time // when an append last made the mark durable
	}
	// syncEvery is how often an append makes the mark durable (0: every
	// append); now reads the clock for it.
	syncEvery time.Duration
	now       func() time.Time
	// onRecovered is called once, when a recovering member's log reaches
	// the owed index (it lifts the vote guard).
	onRecovered func(index uint64)

	jobs chan mark  // to the mark goroutine: write this record durably
	done chan error // its answer
}

// markSyncEvery bounds how often appends make the mark durable (see
// markedLog).
const markSyncEvery = 100 * time.Millisecond

func newMarkedLog(w *wal.WAL, m *markFile, acked, owed uint64, onRecovered func(uint64)) *markedLog {
	l := &markedLog{wal: w, onRecovered: onRecovered, jobs: make(chan mark), done: make(chan error, 1),
		syncEvery: markSyncEvery, now: time.Now}
	l.mu.mark, l.mu.acked, l.mu.owed = m, acked, owed
	go l.markWriter(m)
	return l
}

// markWriter writes the records StoreLogs hands it, each made durable
// before it answers. It ends when jobs is closed.
func (l *markedLog) markWriter(m *markFile) {
	for r := range l.jobs {
		l.done <- m.write(r, true)
	}
}

// FirstIndex implements raft.LogStore.
func (l *markedLog) FirstIndex() (uint64, error) { return l.wal.FirstIndex() }

// LastIndex implements raft.LogStore.
func (l *markedLog) LastIndex() (uint64, error) { return l.wal.LastIndex() }

// GetLog implements raft.LogStore.
func (l *markedLog) GetLog(index uint64, log *raft.Log) error { return l.wal.GetLog(index, log) }

// IsMonotonic implements raft.MonotonicLogStore, as the WAL does: raft
// then empties the log after installing a snapshot instead of keeping a
// log with a gap.
func (l *markedLog) IsMonotonic() bool { return l.wal.IsMonotonic() }

// StoreLog implements raft.LogStore.
func (l *markedLog) StoreLog(log *raft.Log) error {
	return l.StoreLogs([]*raft.Log{log})
}

// StoreLogs implements raft.LogStore: the entries are durable, and the
// mark covers them, when it returns nil.
func (l *markedLog) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	last := logs[len(logs)-1].Index
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return wal.ErrClosed
	}
	var err, merr error
	if now := l.now(); l.syncEvery <= 0 || now.Sub(l.mu.synced) >= l.syncEvery {
		l.mu.synced = now
		l.jobs <- mark{stored: min(l.mu.acked, last), writing: last, owed: l.mu.owed}
		err = l.wal.StoreLogs(logs)
		merr = <-l.done
	} else {
		err = l.wal.StoreLogs(logs)
	}
	if err != nil {
		return err // the mark's writing > stored says nothing was promised
	}
	if merr != nil {
		return fmt.Errorf("cluster: raft log mark: %w", merr)
	}
	l.mu.acked = last
	recovered := l.mu.owed != 0 && last >= l.mu.owed
	if recovered {
		l.mu.owed = 0
	}
	// Into the page cache. Best effort: should it fail, the next durable
	// record carries stored = last all the same.
	_ = l.mu.mark.write(mark{stored: last, writing: last, owed: l.mu.owed}, false)
	if recovered && l.onRecovered != nil {
		l.onRecovered(last)
	}
	return nil
}

// DeleteRange implements raft.LogStore. Deleting the tail lowers the mark
// first, durably: were the deletion to reach the disk and the mark not,
// the next start would take the missing suffix for damage.
func (l *markedLog) DeleteRange(lo, hi uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return wal.ErrClosed
	}
	last, err := l.wal.LastIndex()
	if err != nil {
		return err
	}
	if lo > 0 && lo <= last && hi >= last {
		floor := lo - 1
		cur := l.mu.mark.last
		if cur.stored > floor || cur.writing > floor || l.mu.acked > floor {
			r := mark{stored: min(cur.stored, floor), writing: min(cur.writing, floor), owed: l.mu.owed}
			if err := l.mu.mark.write(r, true); err != nil {
				return fmt.Errorf("cluster: raft log mark: %w", err)
			}
			l.mu.acked = min(l.mu.acked, floor)
		}
	}
	return l.wal.DeleteRange(lo, hi)
}

// close stops the mark goroutine and closes the mark file (not the WAL).
func (l *markedLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return nil
	}
	l.mu.closed = true
	close(l.jobs)
	return l.mu.mark.close()
}
