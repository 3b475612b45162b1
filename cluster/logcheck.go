package cluster

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/types"
)

// logCheck is what the startup verification found in a member's log.
type logCheck struct {
	first, last uint64 // the WAL's first and last index (0, 0: empty)
	// bad is the first entry that failed a check (0: none), why says
	// which and where. Every entry from bad on is unusable: raft-wal can
	// only delete a suffix.
	bad uint64
	why string
	// entries read, segments verified.
	entries  uint64
	segments int
	// config is the latest membership among the snapshot's and the good
	// entries' (nil: none known).
	config *raft.Configuration
}

// checkLog verifies the log of w, whose segments (from raft-wal's
// metadata) are segs in walDir, and whose newest snapshot, if any, is
// snap: first every live batch of every segment against its commit CRC
// (segcheck.go), then every entry from the first to the last by reading
// it through the WAL, as raft will: it must decode, and be the entry of
// that index (a damaged index frame or metadata points elsewhere).
func checkLog(walDir string, w *wal.WAL, segs []types.SegmentInfo, snap *raft.SnapshotMeta) (logCheck, error) {
	var c logCheck
	var err error
	if c.first, err = w.FirstIndex(); err != nil {
		return c, err
	}
	if c.last, err = w.LastIndex(); err != nil {
		return c, err
	}
	configIndex := uint64(0)
	if snap != nil && len(snap.Configuration.Servers) > 0 {
		cfg := snap.Configuration
		c.config, configIndex = &cfg, snap.ConfigurationIndex
	}
	if c.last == 0 {
		return c, nil
	}
	segs = slices.Clone(segs)
	slices.SortFunc(segs, func(a, b types.SegmentInfo) int { return cmp.Compare(a.BaseIndex, b.BaseIndex) })
	for i, si := range segs {
		lo, hi := max(si.MinIndex, c.first), c.last
		if !si.SealTime.IsZero() {
			hi = min(hi, si.MaxIndex)
		}
		if i+1 < len(segs) {
			hi = min(hi, segs[i+1].BaseIndex-1)
		}
		if lo > hi {
			continue
		}
		d, err := checkSegment(walDir, si, lo, hi)
		if err != nil {
			return c, err
		}
		c.segments++
		if d != nil {
			c.bad, c.why = d.index, d.why
			break
		}
	}
	end := c.last
	if c.bad != 0 {
		end = c.bad - 1
	}
	var e raft.Log
	for idx := c.first; idx <= end && idx != 0; idx++ {
		if err := w.GetLog(idx, &e); err != nil {
			c.bad, c.why = idx, fmt.Sprintf("entry %d cannot be read: %v", idx, err)
			break
		}
		if e.Index != idx {
			c.bad, c.why = idx, fmt.Sprintf("the log returns entry %d where entry %d belongs", e.Index, idx)
			break
		}
		c.entries++
		if e.Type == raft.LogConfiguration && idx > configIndex {
			cfg, err := decodeConfiguration(e.Data)
			if err != nil {
				c.bad, c.why = idx, fmt.Sprintf("entry %d: %v", idx, err)
				break
			}
			c.config, configIndex = &cfg, idx
		}
	}
	if c.bad != 0 && c.why == "" {
		c.why = fmt.Sprintf("entry %d", c.bad)
	}
	return c, nil
}

// decodeConfiguration is raft.DecodeConfiguration, which panics on bad
// input, as an error.
func decodeConfiguration(b []byte) (cfg raft.Configuration, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("configuration does not decode: %v", p)
		}
	}()
	return raft.DecodeConfiguration(b), nil
}

// walDir is where a raft directory keeps its WAL.
func walDir(dir string) string { return filepath.Join(dir, "wal") }
