package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
)

// markedFixture is a WAL with its mark in a temporary directory.
type markedFixture struct {
	t   *testing.T
	dir string
	w   *wal.WAL
	l   *markedLog
	mf  *markFile
}

func newMarkedFixture(t *testing.T, owed uint64, onRecovered func(uint64)) *markedFixture {
	t.Helper()
	dir := t.TempDir()
	w, err := wal.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	mf, _, err := openMark(dir)
	if err != nil {
		t.Fatal(err)
	}
	var owedTerm uint64 // the entries' (entries)
	if owed != 0 {
		owedTerm = 1
	}
	if err := mf.create(mark{owed: owed, owedTerm: owedTerm}); err != nil {
		t.Fatal(err)
	}
	f := &markedFixture{t: t, dir: dir, w: w, mf: mf, l: newMarkedLog(w, mf, 0, owed, owedTerm, onRecovered)}
	f.l.writeEvery = 0 // a write-out after every append; TestMarkedLogWritesOutEveryInterval tests the interval
	t.Cleanup(func() {
		f.l.close()
		w.Close()
	})
	return f
}

// entries are raft log entries lo..hi.
func entries(lo, hi uint64) []*raft.Log {
	var ls []*raft.Log
	for i := lo; i <= hi; i++ {
		ls = append(ls, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: fmt.Appendf(nil, "entry %d", i)})
	}
	return ls
}

func (f *markedFixture) store(lo, hi uint64) {
	f.t.Helper()
	if err := f.l.StoreLogs(entries(lo, hi)); err != nil {
		f.t.Fatal(err)
	}
}

// onDisk is the mark as a restart reads it.
func (f *markedFixture) onDisk() mark {
	f.t.Helper()
	m, st, err := openMark(f.dir)
	if err != nil || st != markFound {
		f.t.Fatalf("mark file: %v %v", st, err)
	}
	m.close()
	r := m.last
	r.seq = 0
	return r
}

// TestMarkedLogWritesOutEveryInterval: appends ask for the mark's
// write-out at most once per writeEvery, never flush it themselves, and
// every append leaves stored = its last index in the file (the page
// cache, which a process crash keeps).
func TestMarkedLogWritesOutEveryInterval(t *testing.T) {
	f := newMarkedFixture(t, 0, nil)
	now := time.Unix(1000, 0)
	f.l.now = func() time.Time { return now }
	f.l.writeEvery = 100 * time.Millisecond
	f.store(1, 10) // the first append asks
	asked, syncs := f.l.mu.writeOuts, f.mf.syncs
	for i := uint64(1); i <= 5; i++ {
		now = now.Add(10 * time.Millisecond)
		f.store(10*i+1, 10*i+10)
		if got := f.onDisk(); got.stored != 10*i+10 {
			t.Fatalf("after %d..%d: stored %d", 10*i+1, 10*i+10, got.stored)
		}
	}
	if f.l.mu.writeOuts != asked {
		t.Fatalf("%d write-outs asked for within one interval, want none", f.l.mu.writeOuts-asked)
	}
	now = now.Add(100 * time.Millisecond)
	f.store(61, 70)
	if f.l.mu.writeOuts != asked+1 {
		t.Fatalf("write-outs asked for once the interval passed: %d, want 1", f.l.mu.writeOuts-asked)
	}
	if f.mf.syncs != syncs {
		t.Fatalf("appends flushed the mark %d times, want never", f.mf.syncs-syncs)
	}
	awaitWrittenOut(t, f.l, 1)
}

// awaitWrittenOut waits until the writer has finished at least n
// write-outs.
func awaitWrittenOut(t *testing.T, l *markedLog, n int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for l.written.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the writer finished %d write-outs in 20 s, want %d", l.written.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestMarkedLogRaisesMark: every StoreLogs leaves stored = its last index
// in the mark, and has the mark written out, never waiting for it.
func TestMarkedLogRaisesMark(t *testing.T) {
	f := newMarkedFixture(t, 0, nil)
	f.store(1, 10)
	if got := f.onDisk(); got != (mark{stored: 10, writing: 10, term: 1}) {
		t.Fatalf("after 1..10: %+v", got)
	}
	asked := f.l.mu.writeOuts
	f.store(11, 20)
	if f.l.mu.writeOuts != asked+1 {
		t.Fatalf("write-outs asked for by one StoreLogs: %d, want 1", f.l.mu.writeOuts-asked)
	}
	if got := f.onDisk(); got != (mark{stored: 20, writing: 20, term: 1}) {
		t.Fatalf("after 11..20: %+v", got)
	}
	if err := f.l.StoreLog(entries(21, 21)[0]); err != nil {
		t.Fatal(err)
	}
	if got := f.onDisk(); got.stored != 21 {
		t.Fatalf("after StoreLog(21): %+v", got)
	}
	awaitWrittenOut(t, f.l, 1)
}

// TestMarkedLogTailDeleteLowersMark: raft dropping a follower's
// conflicting suffix lowers the mark, durably, before the WAL deletes.
func TestMarkedLogTailDeleteLowersMark(t *testing.T) {
	f := newMarkedFixture(t, 0, nil)
	f.store(1, 20)
	syncs := f.mf.syncs
	if err := f.l.DeleteRange(15, 20); err != nil {
		t.Fatal(err)
	}
	if f.mf.syncs != syncs+1 {
		t.Fatal("the tail deletion did not write the mark durably")
	}
	if got := f.onDisk(); got != (mark{stored: 14, writing: 14, term: 1}) {
		t.Fatalf("after deleting 15..20: %+v", got)
	}
	if last, _ := f.w.LastIndex(); last != 14 {
		t.Fatalf("log ends at %d, want 14", last)
	}
	// The replacement entries raise it again.
	f.store(15, 17)
	if got := f.onDisk(); got != (mark{stored: 17, writing: 17, term: 1}) {
		t.Fatalf("after storing 15..17 again: %+v", got)
	}
}

// TestMarkedLogHeadDeleteKeepsMark: compaction behind a snapshot does not
// move the mark.
func TestMarkedLogHeadDeleteKeepsMark(t *testing.T) {
	f := newMarkedFixture(t, 0, nil)
	f.store(1, 20)
	syncs := f.mf.syncs
	if err := f.l.DeleteRange(1, 12); err != nil {
		t.Fatal(err)
	}
	if f.mf.syncs != syncs {
		t.Fatal("a head deletion wrote the mark")
	}
	if got := f.onDisk(); got != (mark{stored: 20, writing: 20, term: 1}) {
		t.Fatalf("after compacting 1..12: %+v", got)
	}
	if first, _ := f.w.FirstIndex(); first != 13 {
		t.Fatalf("log starts at %d, want 13", first)
	}
}

// TestMarkedLogRecoveryEnds: a recovering log reports, once, that it
// reached the owed index, and the mark forgets the debt.
func TestMarkedLogRecoveryEnds(t *testing.T) {
	var got []uint64
	f := newMarkedFixture(t, 25, func(i uint64) { got = append(got, i) })
	f.store(1, 24)
	if len(got) != 0 || f.onDisk().owed != 25 {
		t.Fatalf("below the owed index: called %v, mark %+v", got, f.onDisk())
	}
	f.store(25, 30)
	f.store(31, 31)
	if len(got) != 1 || got[0] != 30 {
		t.Fatalf("onRecovered calls %v, want [30]", got)
	}
	if m := f.onDisk(); m.owed != 0 || m.stored != 31 {
		t.Fatalf("mark after recovery: %+v", m)
	}
}
