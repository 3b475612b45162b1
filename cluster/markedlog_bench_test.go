package cluster

import (
	"testing"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
)

// BenchmarkStoreLogs is the cost of the log mark per append: the WAL
// alone against the WAL behind the mark, batches of 16 entries of 256
// bytes (each append is one fsync of the WAL; with the mark, a store into
// the mark's mapped page and, every markWriteEvery, a write-out of it on
// the mark's goroutine). Compare the two with benchstat;
// BenchmarkMarkWrite is the mark's durable write alone (a tail deletion's).
func BenchmarkStoreLogs(b *testing.B) {
	batch := func(lo uint64) []*raft.Log {
		ls := make([]*raft.Log, 16)
		for i := range ls {
			ls[i] = &raft.Log{Index: lo + uint64(i), Term: 1, Type: raft.LogCommand, Data: make([]byte, 256)}
		}
		return ls
	}
	for _, name := range []string{"wal", "marked"} {
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			w, err := wal.Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			var store raft.LogStore = w
			if name == "marked" {
				mf, _, err := openMark(dir)
				if err != nil {
					b.Fatal(err)
				}
				if err := mf.create(mark{}); err != nil {
					b.Fatal(err)
				}
				l := newMarkedLog(w, mf, 0, 0, 0, nil)
				defer l.close()
				store = l
			}
			b.ReportAllocs()
			next := uint64(1)
			for b.Loop() {
				if err := store.StoreLogs(batch(next)); err != nil {
					b.Fatal(err)
				}
				next += 16
			}
		})
	}
}

func BenchmarkMarkWrite(b *testing.B) {
	mf, _, err := openMark(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer mf.close()
	if err := mf.create(mark{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		i++
		if err := mf.write(mark{stored: i, writing: i}, true); err != nil {
			b.Fatal(err)
		}
	}
}
