package main

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/dflockd-ng/dflockd/cluster"
	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/snapfile"
)

// snapshotFile writes a snapshot file of a cluster state that has applied
// only its Init.
func snapshotFile(t *testing.T) string {
	t.Helper()
	f := cluster.NewFSM(engine.Config{}, nil)
	b := cluster.AppendBatch(nil, &cluster.Batch{Ops: []cluster.Op{{Kind: cluster.OpInit, Init: cluster.Init{FenceFloor: 1 << 50}}}})
	f.Apply(&raft.Log{Index: 7, Term: 2, Type: raft.LogCommand, Data: b})
	c, err := f.Capture()
	if err != nil {
		t.Fatal(err)
	}
	h := snapfile.Header{Index: c.Index, Term: c.Term, Digest: hex.EncodeToString(c.Digest[:]), Fence: c.Fence,
		Members: []snapfile.Member{{ID: "n1", Address: "127.0.0.1:1", Suffrage: "Voter"}}}
	var buf bytes.Buffer
	if err := snapfile.Write(&buf, &h, c.State); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "s.snap")
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestCommandSnapshotRestore: the command's usage errors, its refusals
// (a damaged file, a non-empty directory, a stranger's id) and a restore.
func TestCommandSnapshotRestore(t *testing.T) {
	file := snapshotFile(t)
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code, _ := runCommand(append([]string{"snapshot"}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	for _, c := range []struct {
		args []string
		code int
		err  string
	}{
		{nil, 2, "usage: dflockd snapshot restore"},
		{[]string{"restore", file}, 2, "--raft-dir is required"},
		{[]string{"restore", "--raft-dir", t.TempDir()}, 2, "name one snapshot FILE"},
		{[]string{"restore", file, "--raft-dir", t.TempDir(), "--fence-floor", "x"}, 2, "is not a number"},
		{[]string{"restore", file, "--raft-dir", t.TempDir(), "--node-id", "n9"}, 1, "not a member"},
		{[]string{"restore", file, "--raft-dir", t.TempDir(), "--node-id", "n9", "--cluster-peers", "n1=127.0.0.1:1@127.0.0.1:2"}, 2, "does not list --node-id"},
	} {
		code, _, stderr := run(c.args...)
		if code != c.code || !strings.Contains(stderr, c.err) {
			t.Errorf("%q: %d %q, want %d and %q", c.args, code, stderr, c.code, c.err)
		}
	}
	data, _ := os.ReadFile(file)
	data[len(data)/2] ^= 1
	bad := filepath.Join(t.TempDir(), "bad.snap")
	os.WriteFile(bad, data, 0o600)
	if code, _, stderr := run("restore", bad, "--raft-dir", t.TempDir()); code != 1 || !strings.Contains(stderr, "checksum mismatch") {
		t.Errorf("a damaged file: %d %q", code, stderr)
	}
	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "x"), nil, 0o600)
	if code, _, stderr := run("restore", file, "--raft-dir", full); code != 1 || !strings.Contains(stderr, "is not empty") {
		t.Errorf("a non-empty directory: %d %q", code, stderr)
	}
	dir := filepath.Join(t.TempDir(), "n1")
	code, out, stderr := run("restore", file, "--raft-dir", dir, "--node-id", "n1", "--fence-floor", "18446744073709551000")
	if code != 0 || !strings.Contains(out, "index 7, term 2") || !strings.Contains(out, "members n1;") ||
		!strings.Contains(out, "above 18446744073709551000") {
		t.Fatalf("restore: %d %q %q", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "raft-mark")); err != nil {
		t.Fatalf("the restored directory has no raft-mark: %v", err)
	}
}
