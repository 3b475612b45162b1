package cluster

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
)

// markedLog is a member's raft LogStore: the WAL, with the mark file
// (logmark.go) kept so that whatever raft is told is stored, the mark
// says so too.
//
// After every append that the WAL has made durable, StoreLogs records
// stored = its last index in the mark, without a sync: a store into the
// page cache, which a process crash (SIGKILL, a panic, the OOM killer)
// does not lose. So after any crash of the process, a log that ends
// before what raft was told is stored is told, whatever the disk did to
// the log.
//
// Against a power cut the mark must reach the disk too. It does without
// a flush of its own: at most every markWriteEvery an append asks the
// mark's goroutine to write the mark's page out (sync_file_range: the
// page goes to the device, which may hold it in its volatile cache), and
// the WAL's next fsync flushes the device's cache, which makes every
// write the device completed before it durable, the mark's included
// (the mark lives beside the log, on the same file system). A flush of
// the mark's own, even one per 100 ms, cost this VM's 3-member cluster
// 9-13 % of its throughput (three members flushing one disk, where the
// logs' flushes are the bottleneck); a write-out costs no flush. What
// the disk then guarantees after a power cut: every entry up to the
// durable record's stored was acknowledged; entries acknowledged after
// it (about the last interval) may be missing unnoticed, as raft-wal
// drops a last batch whose write was torn. Any loss reaching further
// back is told. A record is only ever written after the WAL made its
// entries durable, so no record, durable or not, claims more than the
// log held.
//
// A tail deletion (raft dropping a follower's conflicting suffix) lowers
// the mark durably (a flush of its own: rare) before the WAL deletes
// anything; so does deleting the whole log (raft does, after installing
// a snapshot that covers it: lowering is always safe, it only weakens
// the check until the next append). Head deletions (compaction behind a
// snapshot) leave it alone.
//
// Raft calls StoreLogs and DeleteRange from its main goroutine only; the
// mutex makes the store safe for any caller anyway.
type markedLog struct {
	wal *wal.WAL

	mu struct {
		sync.Mutex
		mark      *markFile
		acked     uint64 // last index of the last append that returned nil
		owed      uint64 // recovering: the index to reach again (mark.owed)
		owedTerm  uint64 // and its term (mark.owedTerm)
		closed    bool
		asked     time.Time // when an append last asked for a write-out
		writeOuts int       // write-outs asked for (tests)
	}
	// writeEvery is how often appends ask for the mark's write-out (0:
	// after every append); now reads the clock for it.
	writeEvery time.Duration
	now        func() time.Time
	// onRecovered is called once, when a recovering member's log reaches
	// the owed index (it lifts the vote guard).
	onRecovered func(index uint64)

	kick    chan struct{} // (capacity 1) to the writer: write the mark out
	written atomic.Int64  // write-outs the writer finished (tests)
	stopped chan struct{} // closed when the writer has ended
}

// markWriteEvery bounds how often appends have the mark written out (see
// markedLog).
const markWriteEvery = 100 * time.Millisecond

func newMarkedLog(w *wal.WAL, m *markFile, acked, owed, owedTerm uint64, onRecovered func(uint64)) *markedLog {
	l := &markedLog{wal: w, onRecovered: onRecovered, kick: make(chan struct{}, 1),
		stopped: make(chan struct{}), writeEvery: markWriteEvery, now: time.Now}
	l.mu.mark, l.mu.acked, l.mu.owed, l.mu.owedTerm = m, acked, owed, owedTerm
	go l.writer(m)
	return l
}

// writer writes the mark's page out whenever an append asks, off raft's
// goroutine: an append never waits for it. A failed write-out is left to
// the next (the page stays dirty, and the kernel writes it back in any
// case). It ends when kick is closed.
func (l *markedLog) writer(m *markFile) {
	defer close(l.stopped)
	for range l.kick {
		if m.writeOut() == nil {
			l.written.Add(1)
		}
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
	if err := l.wal.StoreLogs(logs); err != nil {
		return err
	}
	l.mu.acked = last
	recovered := l.mu.owed != 0 && last >= l.mu.owed
	if recovered {
		l.mu.owed, l.mu.owedTerm = 0, 0
	}
	// Into the page cache. Best effort: should it fail, the next append's
	// record carries stored = its own last all the same.
	_ = l.mu.mark.write(mark{stored: last, writing: last, owed: l.mu.owed,
		term: logs[len(logs)-1].Term, owedTerm: l.mu.owedTerm}, false)
	if now := l.now(); l.writeEvery <= 0 || now.Sub(l.mu.asked) >= l.writeEvery {
		l.mu.asked = now
		l.mu.writeOuts++
		select {
		case l.kick <- struct{}{}:
		default: // one is pending: it writes this record too
		}
	}
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
			r := mark{stored: min(cur.stored, floor), writing: min(cur.writing, floor), owed: l.mu.owed,
				term: cur.term, owedTerm: l.mu.owedTerm}
			if cur.stored > floor {
				// The term of the entry at floor; if the log no longer
				// holds it, the old one, which is no lower.
				var e raft.Log
				if floor == 0 {
					r.term = 0
				} else if l.wal.GetLog(floor, &e) == nil {
					r.term = e.Term
				}
			}
			if err := l.mu.mark.write(r, true); err != nil {
				return fmt.Errorf("cluster: raft log mark: %w", err)
			}
			l.mu.acked = min(l.mu.acked, floor)
		}
	}
	return l.wal.DeleteRange(lo, hi)
}

// close stops the writer and closes the mark file (not the WAL).
func (l *markedLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return nil
	}
	l.mu.closed = true
	close(l.kick)
	<-l.stopped
	return l.mu.mark.close()
}
