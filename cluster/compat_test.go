package cluster

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/dflockd-ng/dflockd/snapfile"
	"github.com/dflockd-ng/dflockd/version"
)

// TestCompatibilityTable holds docs/upgrades.md to the code: its row for
// this release (version.Number) must name the formats and entry kinds
// this tree writes and reads. A change to any of them (a new entry kind,
// a snapshot, mark or backup format) fails here until the table, the
// version-skew policy beside it and the CHANGELOG's Compatibility
// section say what it means for a cluster that mixes releases.
func TestCompatibilityTable(t *testing.T) {
	b, err := os.ReadFile("../docs/upgrades.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	begin, end := strings.Index(doc, "<!-- compat:begin -->"), strings.Index(doc, "<!-- compat:end -->")
	if begin < 0 || end < begin {
		t.Fatal("docs/upgrades.md: no compat:begin … compat:end table")
	}
	var row []string
	for _, line := range strings.Split(doc[begin:end], "\n") {
		cells := strings.Split(strings.Trim(line, "| "), "|")
		if len(cells) > 1 && strings.TrimSpace(cells[0]) == version.Number {
			for _, c := range cells {
				row = append(row, strings.TrimSpace(c))
			}
		}
	}
	if len(row) != 6 {
		t.Fatalf("docs/upgrades.md: the compatibility table has no row of 6 cells for release %s (got %q)", version.Number, row)
	}
	snap := snapMagic[len(snapMagic)-1]
	for _, c := range []struct{ what, got, want string }{
		{"batch format", row[1], fmt.Sprint(batchFormat)},
		{"log entry kinds", row[2], fmt.Sprintf("%d–%d", OpInit, opLimit-1)},
		{"snapshot format written (read)", row[3], fmt.Sprintf("%d (1–%d)", snap, snap)},
		{"raft-mark written (read)", row[4], fmt.Sprintf("%d (1–%d)", markVersion, markVersion)},
		{"backup file format", row[5], fmt.Sprint(snapfile.Version)},
	} {
		if c.got != c.want {
			t.Errorf("docs/upgrades.md, release %s, %s: %q, but the code says %q", version.Number, c.what, c.got, c.want)
		}
	}
}

// Every snapshot format up to the one written is read (the table's
// "(1–N)"): a release restores the snapshots of every earlier one.
func TestSnapshotFormatsRead(t *testing.T) {
	for v := byte(1); v <= snapMagic[len(snapMagic)-1]; v++ {
		magic := snapMagic[:len(snapMagic)-1] + string(v)
		err := new(FSM).Restore(io.NopCloser(strings.NewReader(magic)))
		if err != nil && strings.Contains(err.Error(), "not a snapshot of this format") {
			t.Errorf("snapshot format %d is not read: %v", v, err)
		}
	}
}
