package cluster

import (
	"bytes"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/snapfile"
)

// backupOf runs a random log on an FSM and returns it and a backup file of
// its state.
func backupOf(t *testing.T) (*FSM, snapfile.Info, []byte) {
	t.Helper()
	g := &fsmGen{rng: rand.New(rand.NewPCG(3, 5))}
	f := NewFSM(engine.Config{Shards: 4}, &textOutput{})
	for range 600 {
		g.batch(t)
	}
	replay(f, g.batches, 1)
	c, err := f.Capture()
	if err != nil {
		t.Fatal(err)
	}
	if c.Index != 600 || c.Fence != f.Engine().LastFence() {
		t.Fatalf("capture at %d, fence %d", c.Index, c.Fence)
	}
	h := snapfile.Header{Index: c.Index, Term: 2, Digest: hex.EncodeToString(c.Digest[:]), Fence: c.Fence,
		Members: []snapfile.Member{{ID: "a", Address: "127.0.0.1:1", Suffrage: "Voter"}}}
	var file bytes.Buffer
	if err := snapfile.Write(&file, &h, c.State); err != nil {
		t.Fatal(err)
	}
	info, state, err := snapfile.Read(&file, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f, info, state
}

// A restored directory opens as a member's storage whose raft snapshot
// decodes to the backup's digest at its index, with the new members; the
// first leader's OpFenceFloor then lifts fences above the restore floor.
func TestRestoreDir(t *testing.T) {
	src, info, state := backupOf(t)
	if _, ok := src.restoredFloor(); ok {
		t.Fatal("a cluster never restored owes a fence floor")
	}
	dir := filepath.Join(t.TempDir(), "member")
	now := time.Unix(1000, 0) // a clock far behind the fences: the margin decides
	servers := []raft.Server{{ID: "x", Address: "127.0.0.1:7001", Suffrage: raft.Voter}}
	r, err := RestoreDir(dir, info, state, RestoreConfig{Servers: servers, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if r.Digest != src.Digest() || r.Index != 600 || r.FenceFloor != src.Engine().LastFence()+fenceMargin {
		t.Fatalf("restored %+v", r)
	}
	s, err := OpenStorage(dir, StorageConfig{LogOutput: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	metas, err := s.Snaps.List()
	if err != nil || len(metas) != 1 {
		t.Fatalf("snapshots %v %v", metas, err)
	}
	m := metas[0]
	if m.Index != 600 || m.Term != 2 || len(m.Configuration.Servers) != 1 || m.Configuration.Servers[0].ID != "x" {
		t.Fatalf("snapshot meta %+v", m)
	}
	if term, _ := s.Stable.GetUint64(keyCurrentTerm); term != 2 {
		t.Fatalf("current term %d", term)
	}
	_, rc, err := s.Snaps.Open(m.ID)
	if err != nil {
		t.Fatal(err)
	}
	f := NewFSM(engine.Config{}, &textOutput{})
	if err := f.Restore(rc); err != nil {
		t.Fatal(err)
	}
	if f.Digest() != src.Digest() {
		t.Fatal("the restored state's digest differs from the source's")
	}
	floor, ok := f.restoredFloor()
	if !ok || floor != r.FenceFloor {
		t.Fatalf("restored floor %d %v, want %d", floor, ok, r.FenceFloor)
	}
	// The new leader's first batch: the floor, then its Promote.
	b := AppendBatch(nil, &Batch{Stamp: f.Now(), Ops: []Op{{Kind: OpFenceFloor, Floor: floor},
		{Kind: OpOrphanTTL}, {Kind: OpPromote}}})
	f.Apply(&raft.Log{Index: 601, Type: raft.LogCommand, Data: b})
	if got := f.Engine().LastFence(); got != floor {
		t.Fatalf("fence after the floor %d, want %d", got, floor)
	}
	if _, ok := f.restoredFloor(); ok {
		t.Fatal("the floor is still owed after it applied")
	}
}

func TestRestoreDirRefuses(t *testing.T) {
	_, info, state := backupOf(t)
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := RestoreDir(full, info, state, RestoreConfig{}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("a non-empty directory: %v", err)
	}
	empty := t.TempDir()
	bad := info
	bad.Header.Digest = strings.Repeat("0", 64)
	if _, err := RestoreDir(empty, bad, state, RestoreConfig{}); err == nil || !strings.Contains(err.Error(), "digest") {
		t.Fatalf("a wrong digest: %v", err)
	}
	if _, err := RestoreDir(empty, info, flip(state, len(state)/2), RestoreConfig{}); err == nil {
		t.Fatal("a damaged state restored")
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Fatalf("a refused restore left %d entries", len(ents))
	}
	// The backup's own members when none are given.
	r, err := RestoreDir(empty, info, state, RestoreConfig{})
	if err != nil || len(r.Servers) != 1 || r.Servers[0].ID != "a" || r.Servers[0].Suffrage != raft.Voter {
		t.Fatalf("restore with the backup's members: %+v %v", r, err)
	}
}
