package cluster

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/dflockd-ng/dflockd/engine"
)

// TestRestoreSnapshotOfB44c68c: a raft snapshot written by the tree at
// commit b44c68c (0.2.0 before issue #37's changes: the FSM kept the
// connections and stable refs itself) restores here with the digest that
// tree computed, and the replica then answers the rest of that log
// exactly as that tree's did, ending with its digest. The snapshot was
// taken within a lease of a failover, holds of the earlier epoch kept:
// that tree could not restore it itself (its engine named closed
// sessions it had no record of); this one does.
//
// testdata/b44c68c: snapshot.bin; tail.hex, the 150 batches after it,
// one per line; replies.txt, what that tree's replica delivered for them;
// digests.txt, the digest at the snapshot and at the end, and the index
// of the snapshot's last entry. Written by a throwaway test in a worktree
// of b44c68c over its own random cluster log (fsmGen, seed 1).
func TestRestoreSnapshotOfB44c68c(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile("testdata/b44c68c/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	digests := strings.Fields(read("digests.txt"))
	var cut uint64
	if _, err := fmt.Sscan(digests[2], &cut); err != nil {
		t.Fatal(err)
	}
	var tail [][]byte
	for _, line := range strings.Fields(read("tail.hex")) {
		b, err := hex.DecodeString(line)
		if err != nil {
			t.Fatal(err)
		}
		tail = append(tail, b)
	}
	out := &textOutput{}
	f := NewFSM(engine.Config{Shards: 16}, out)
	if err := f.Restore(io.NopCloser(bytes.NewReader([]byte(read("snapshot.bin"))))); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if d := f.Digest(); fmt.Sprintf("%x", d) != digests[0] {
		t.Fatalf("digest after the restore %x, b44c68c's %s", d, digests[0])
	}
	f.deliverEpoch.Store(f.epoch)
	replay(f, tail, cut+1)
	want := strings.Split(strings.TrimSuffix(read("replies.txt"), "\n"), "\n")
	compare(t, "b44c68c's replies", want, out.lines)
	if len(out.lines) != len(want) {
		t.Fatalf("%d replies, b44c68c's replica delivered %d", len(out.lines), len(want))
	}
	if d := f.Digest(); fmt.Sprintf("%x", d) != digests[1] {
		t.Fatalf("final digest %x, b44c68c's %s", d, digests[1])
	}
	t.Logf("restored b44c68c's snapshot; %d batches replayed, %d replies as it delivered them, digests equal", len(tail), len(out.lines))
}
