package cluster

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

// Opening a raft directory whose log was truncated or garbled after this
// member had acknowledged it.

// frame is one frame of a segment file, as the tests find them.
type frame struct {
	off int64
	typ byte
	n   uint32
}

// segmentFrames walks a segment file's frames; used is the end of its
// last commit frame.
func segmentFrames(t *testing.T, path string) (fs []frame, used int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for off := int64(segHeaderLen); off+frameHeaderLen <= int64(len(b)); {
		typ, n := b[off], binary.LittleEndian.Uint32(b[off+4:])
		if typ < frameEntry || typ > frameCommit {
			break
		}
		fs = append(fs, frame{off, typ, n})
		if typ == frameCommit {
			off += frameHeaderLen
			used = off
			continue
		}
		off += frameHeaderLen + int64(n) + int64(pad8(n))
	}
	return fs, used
}

// segments lists the directory's segment files, oldest first.
func segments(t *testing.T, dir string) []string {
	t.Helper()
	ps, err := filepath.Glob(filepath.Join(walDir(dir), "*.wal"))
	if err != nil || len(ps) == 0 {
		t.Fatalf("no segment files in %s: %v", dir, err)
	}
	slices.Sort(ps)
	return ps
}

// flipEntryByte flips one payload byte of the first entry frame at or
// after half the segment's used bytes, before its last commit.
func flipEntryByte(t *testing.T, path string) {
	t.Helper()
	fs, used := segmentFrames(t, path)
	for _, f := range fs {
		if f.typ == frameEntry && f.off >= used/2 && f.off < used-frameHeaderLen*2 {
			flipAt(t, path, f.off+frameHeaderLen+int64(f.n)/2)
			return
		}
	}
	t.Fatalf("%s: no entry frame in its second half", path)
}

func flipAt(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x01
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// truncateHalf cuts a segment file to half the bytes it uses.
func truncateHalf(t *testing.T, path string) {
	t.Helper()
	_, used := segmentFrames(t, path)
	if err := os.Truncate(path, used/2); err != nil {
		t.Fatal(err)
	}
}

type storageFixture struct {
	t   *testing.T
	dir string
	cfg StorageConfig
}

func newStorageFixture(t *testing.T, segmentSize int) *storageFixture {
	return &storageFixture{t: t, dir: t.TempDir(), cfg: StorageConfig{ID: "n1", Peers: 3, segmentSize: segmentSize}}
}

func (f *storageFixture) open(mod func(*StorageConfig)) (*Storage, error) {
	cfg := f.cfg
	if mod != nil {
		mod(&cfg)
	}
	return OpenStorage(f.dir, cfg)
}

func (f *storageFixture) mustOpen(mod func(*StorageConfig)) *Storage {
	f.t.Helper()
	s, err := f.open(mod)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { s.Close() })
	return s
}

// fill stores entries from..to in batches of batch, as raft appends them.
func fill(t *testing.T, s *Storage, from, to, batch uint64) {
	t.Helper()
	for lo := from; lo <= to; lo += batch {
		if err := s.Logs.StoreLogs(entries(lo, min(lo+batch-1, to))); err != nil {
			t.Fatal(err)
		}
	}
}

// configEntry is a configuration entry at index of the given voters.
func configEntry(index uint64, ids ...raft.ServerID) *raft.Log {
	var c raft.Configuration
	for _, id := range ids {
		c.Servers = append(c.Servers, raft.Server{ID: id, Address: raft.ServerAddress(id + ":1"), Suffrage: raft.Voter})
	}
	return &raft.Log{Index: index, Term: 1, Type: raft.LogConfiguration, Data: raft.EncodeConfiguration(c)}
}

// damaged opens the fixture expecting a DamageError whose message holds
// every part.
func (f *storageFixture) damaged(mod func(*StorageConfig), parts ...string) {
	f.t.Helper()
	s, err := f.open(mod)
	if err == nil {
		s.Close()
		f.t.Fatalf("opened a damaged directory; want an error with %q", parts)
	}
	if !errors.Is(err, ErrDamaged) {
		f.t.Fatalf("error %v does not match ErrDamaged", err)
	}
	for _, p := range append([]string{f.dir}, parts...) {
		if !strings.Contains(err.Error(), p) {
			f.t.Fatalf("error lacks %q:\n%v", p, err)
		}
	}
}

func lastIndex(t *testing.T, s *Storage) uint64 {
	t.Helper()
	i, err := s.Logs.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// TestOpenDetectsTruncatedLog is issue #19 §2: the newest segment cut to
// half its used bytes, after the member had acknowledged every entry.
func TestOpenDetectsTruncatedLog(t *testing.T) {
	f := newStorageFixture(t, 0)
	s := f.mustOpen(nil)
	fill(t, s, 1, 200, 10)
	s.Close()
	truncateHalf(t, segments(t, f.dir)[0])

	f.damaged(nil, "..200 are lost", "acknowledged storing entries up to index 200", "one of 3 voters", "--raft-recover")
	f.damaged(func(c *StorageConfig) { c.Peers = 1 }, "only voter", "--raft-accept-loss", "backup")
	f.damaged(func(c *StorageConfig) { c.Peers = 1; c.Recover = true }, "there is none")
}

// TestRecoverRejoinsWithoutVoting: --raft-recover opens the directory,
// keeps the member out of elections until the log holds what it had
// acknowledged, and a restart before then is still refused without it.
func TestRecoverRejoinsWithoutVoting(t *testing.T) {
	f := newStorageFixture(t, 0)
	s := f.mustOpen(nil)
	fill(t, s, 1, 200, 10)
	s.Close()
	truncateHalf(t, segments(t, f.dir)[0])

	recover := func(c *StorageConfig) { c.Recover = true }
	s = f.mustOpen(recover)
	if !s.Recovering() {
		t.Fatal("not recovering")
	}
	inner := newInmemTransport()
	if tr := s.Transport(inner); tr == raft.Transport(inner) {
		t.Fatal("a recovering member's transport is not guarded")
	}
	last := lastIndex(t, s)
	if last >= 200 || last == 0 {
		t.Fatalf("truncated log ends at %d", last)
	}
	fill(t, s, last+1, 150, 7)
	s.Close()
	f.damaged(nil, "--raft-recover has not finished", "must reach 200")

	s = f.mustOpen(recover)
	fill(t, s, 151, 199, 7)
	if !s.Recovering() {
		t.Fatal("stopped recovering at 199, below 200")
	}
	fill(t, s, 200, 203, 2)
	if s.Recovering() {
		t.Fatal("still recovering at 203")
	}
	s.Close()
	s = f.mustOpen(nil)
	if s.Recovering() || lastIndex(t, s) != 203 {
		t.Fatalf("reopened: recovering %v, last %d", s.Recovering(), lastIndex(t, s))
	}
}

// TestRecoverOwesTheTerm: a recovering member knows the term of the
// entry it owes, from the mark (which records it with every append), so
// that it can vote for a candidate holding it (issue #34); across a
// restart mid-recovery too. With a mark from before the terms were
// recorded, the member's current term stands in for it.
func TestRecoverOwesTheTerm(t *testing.T) {
	f := newStorageFixture(t, 0)
	s := f.mustOpen(nil)
	fill(t, s, 1, 100, 10)
	later := entries(101, 200)
	for _, e := range later {
		e.Term = 5
	}
	for lo := 0; lo < len(later); lo += 10 {
		if err := s.Logs.StoreLogs(later[lo : lo+10]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Stable.SetUint64(keyCurrentTerm, 7); err != nil {
		t.Fatal(err)
	}
	s.Close()
	truncateHalf(t, segments(t, f.dir)[0])

	recover := func(c *StorageConfig) { c.Recover = true }
	s = f.mustOpen(recover)
	if g := s.guard; g == nil || g.owed != 200 || g.owedTerm != 5 {
		t.Fatalf("recovering: guard %+v, want owed 200 of term 5", g)
	}
	s.Close()
	s = f.mustOpen(recover) // not yet recovered: the mark still owes it
	if g := s.guard; g == nil || g.owed != 200 || g.owedTerm != 5 {
		t.Fatalf("recovering again: guard %+v, want owed 200 of term 5", g)
	}
	s.Close()

	// A version 1 mark owing 200: its term unknown, the current term (7)
	// bounds it.
	path := filepath.Join(f.dir, markFileName)
	r := mark{seq: 9, stored: 150, writing: 150, owed: 200}
	b := appendMark(nil, r)[:48]
	binary.LittleEndian.PutUint32(b[8:], 1)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	b = append(b, make([]byte, 2*markSlot-len(b))...)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s = f.mustOpen(recover)
	if g := s.guard; g == nil || g.owed != 200 || g.owedTerm != 7 {
		t.Fatalf("recovering with a version 1 mark: guard %+v, want owed 200 of term 7", g)
	}
}

// TestLoneMemberByConfiguration: the membership in the log decides who
// could hold a copy, before the peer list.
func TestLoneMemberByConfiguration(t *testing.T) {
	for _, tc := range []struct {
		voters []raft.ServerID
		peers  int
		lone   bool
	}{
		{[]raft.ServerID{"n1"}, 3, true},
		{[]raft.ServerID{"n1", "n2", "n3"}, 1, false},
	} {
		f := newStorageFixture(t, 0)
		f.cfg.Peers = tc.peers
		s := f.mustOpen(nil)
		if err := s.Logs.StoreLog(configEntry(1, tc.voters...)); err != nil {
			t.Fatal(err)
		}
		fill(t, s, 2, 200, 10)
		s.Close()
		truncateHalf(t, segments(t, f.dir)[0])
		s, err := f.open(func(c *StorageConfig) { c.Recover = true })
		if tc.lone {
			if err == nil || !strings.Contains(err.Error(), "only voter") {
				t.Fatalf("voters %v: --raft-recover on the only voter: %v", tc.voters, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("voters %v: %v", tc.voters, err)
		}
		s.Close()
	}
}

// TestAcceptLoss: the lone member's way out; afterwards the directory
// opens as an ordinary one.
func TestAcceptLoss(t *testing.T) {
	f := newStorageFixture(t, 0)
	f.cfg.Peers = 1
	s := f.mustOpen(nil)
	fill(t, s, 1, 200, 10)
	s.Close()
	truncateHalf(t, segments(t, f.dir)[0])
	s = f.mustOpen(func(c *StorageConfig) { c.AcceptLoss = true })
	last := lastIndex(t, s)
	if s.Recovering() {
		t.Fatal("accepting the loss left the member recovering")
	}
	fill(t, s, last+1, last+5, 5)
	s.Close()
	s = f.mustOpen(nil)
	if got := lastIndex(t, s); got != last+5 {
		t.Fatalf("reopened at %d, want %d", got, last+5)
	}
}

// TestOpenDetectsFlippedByte: one byte flipped inside an entry, in a
// sealed segment or in an earlier batch of the tail, neither of which
// raft-wal checks, is found at startup; recovery drops from that entry on.
func TestOpenDetectsFlippedByte(t *testing.T) {
	for _, where := range []string{"sealed", "tail"} {
		t.Run(where, func(t *testing.T) {
			f := newStorageFixture(t, 8<<10)
			s := f.mustOpen(nil)
			fill(t, s, 1, 600, 5)
			s.Close()
			segs := segments(t, f.dir)
			if len(segs) < 3 {
				t.Fatalf("%d segments, want several", len(segs))
			}
			target := segs[len(segs)/2]
			if where == "tail" {
				target = segs[len(segs)-1]
			}
			flipEntryByte(t, target)
			f.damaged(nil, "checksum mismatch", filepath.Base(target), "are unusable", "--raft-recover")

			s = f.mustOpen(func(c *StorageConfig) { c.Recover = true })
			last := lastIndex(t, s)
			if last >= 600 || !s.Recovering() {
				t.Fatalf("recovering from the flip: last %d, recovering %v", last, s.Recovering())
			}
			fill(t, s, last+1, 600, 5)
			if s.Recovering() {
				t.Fatal("still recovering at 600")
			}
		})
	}
}

// TestOpenDetectsFlippedFrameHeader: a flipped frame type in the tail
// makes raft-wal stop reading there, as at a torn write; the mark tells
// it lost acknowledged entries.
func TestOpenDetectsFlippedFrameHeader(t *testing.T) {
	f := newStorageFixture(t, 0)
	s := f.mustOpen(nil)
	fill(t, s, 1, 200, 10)
	s.Close()
	path := segments(t, f.dir)[0]
	fs, used := segmentFrames(t, path)
	for _, fr := range fs {
		if fr.typ == frameEntry && fr.off >= used/2 {
			flipAt(t, path, fr.off) // type 1 becomes 0 with a length: invalid
			break
		}
	}
	f.damaged(nil, "..200 are lost")
}

// TestTornFinalBatchIsNotDamage: a crash while the last append was being
// written leaves its entries torn, and raft-wal drops them; raft was never
// told they were stored, so the mark (stored below them) does not object.
func TestTornFinalBatchIsNotDamage(t *testing.T) {
	f := newStorageFixture(t, 0)
	s := f.mustOpen(nil)
	fill(t, s, 1, 100, 10)
	// As the mark stands while 91..100 are being written.
	s.marked.mu.mark.write(mark{stored: 90, writing: 100}, true)
	s.marked.close()
	s.marked = nil
	s.Close()
	path := segments(t, f.dir)[0]
	fs, _ := segmentFrames(t, path)
	var lastEntry frame
	for _, fr := range fs {
		if fr.typ == frameEntry {
			lastEntry = fr
		}
	}
	flipAt(t, path, lastEntry.off+frameHeaderLen)
	s = f.mustOpen(nil)
	if got := lastIndex(t, s); got != 90 {
		t.Fatalf("log ends at %d, want 90 (the torn batch dropped)", got)
	}
}

// TestOpenWithoutMark: a directory from before the mark opens, and gets
// one from its log.
func TestOpenWithoutMark(t *testing.T) {
	f := newStorageFixture(t, 0)
	s := f.mustOpen(nil)
	fill(t, s, 1, 50, 10)
	s.Close()
	if err := os.Remove(filepath.Join(f.dir, markFileName)); err != nil {
		t.Fatal(err)
	}
	// What a crash in the middle of creating the mark leaves: the file
	// under its temporary name only.
	tmp := filepath.Join(f.dir, markFileName+markTempSuffix)
	if err := os.WriteFile(tmp, make([]byte, 300), 0o600); err != nil {
		t.Fatal(err)
	}
	s = f.mustOpen(nil)
	s.Close()
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the temporary mark file is still there: %v", err)
	}
	m, st, err := openMark(f.dir)
	if err != nil || st != markFound || m.last.stored != 50 {
		t.Fatalf("new mark: %+v %v %v", m.last, st, err)
	}
	m.close()
}

// TestOpenWithCorruptMark: with the mark unreadable, nothing tells
// whether the log is whole; only --raft-accept-loss starts it.
func TestOpenWithCorruptMark(t *testing.T) {
	f := newStorageFixture(t, 0)
	s := f.mustOpen(nil)
	fill(t, s, 1, 50, 10)
	s.Close()
	path := filepath.Join(f.dir, markFileName)
	flipAt(t, path, 20)
	flipAt(t, path, markSlot+20)
	f.damaged(nil, "raft-mark file is unreadable")
	f.damaged(func(c *StorageConfig) { c.Recover = true }, "raft-mark file is unreadable", "cannot tell how far")
	s = f.mustOpen(func(c *StorageConfig) { c.AcceptLoss = true })
	s.Close()
	s = f.mustOpen(nil)
	if got := lastIndex(t, s); got != 50 {
		t.Fatalf("log ends at %d, want 50", got)
	}
}

// TestOpenWithEmptiedMark is issue #34's second case: a raft-mark that
// is present but empty or zero-filled is as unreadable as one whose
// slots fail their checksum, not the blank mark of a new directory: the
// log (here truncated too) may have lost what the member acknowledged.
// The refusal names the file and the ways out; --raft-accept-loss starts
// the member, and a new mark.
func TestOpenWithEmptiedMark(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content []byte
		says    string
	}{
		{"empty", nil, "is empty"},
		{"zeros", make([]byte, 2*markSlot), "holds only zero bytes"},
		{"short zeros", make([]byte, 100), "holds only zero bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newStorageFixture(t, 0)
			s := f.mustOpen(nil)
			fill(t, s, 1, 200, 10)
			s.Close()
			truncateHalf(t, segments(t, f.dir)[0])
			path := filepath.Join(f.dir, markFileName)
			if err := os.WriteFile(path, tc.content, 0o600); err != nil {
				t.Fatal(err)
			}
			f.damaged(nil, "raft-mark file is unreadable", path, tc.says, "--raft-accept-loss", "backup", "dflockctl cluster remove")
			f.damaged(func(c *StorageConfig) { c.Recover = true }, path, "cannot tell how far")
			f.damaged(func(c *StorageConfig) { c.Peers = 1 }, path, tc.says, "--raft-accept-loss", "backup")
			s = f.mustOpen(func(c *StorageConfig) { c.AcceptLoss = true })
			last := lastIndex(t, s)
			s.Close()
			s = f.mustOpen(nil)
			if got := lastIndex(t, s); got != last || last == 0 || last >= 200 {
				t.Fatalf("after accepting: log ends at %d, then %d", last, got)
			}
		})
	}
}

// TestOpenFindsEveryFlip flips, one at a time, bytes spread over the
// used part of every segment: each open must either refuse the directory
// or serve every entry exactly as written (a flip nothing reads, such as
// a commit frame's reserved bytes).
func TestOpenFindsEveryFlip(t *testing.T) {
	if testing.Short() {
		t.Skip("hundreds of opens")
	}
	f := newStorageFixture(t, 8<<10)
	s := f.mustOpen(nil)
	fill(t, s, 1, 400, 5)
	s.Close()
	pristine := f.dir
	var trials, refused int
	for _, seg := range segments(t, pristine) {
		_, used := segmentFrames(t, seg)
		for off := int64(0); off < used; off += 97 {
			f.dir = t.TempDir()
			copyDir(t, pristine, f.dir)
			flipAt(t, filepath.Join(walDir(f.dir), filepath.Base(seg)), off)
			trials++
			s, err := f.open(nil)
			if err != nil {
				if !errors.Is(err, ErrDamaged) && !strings.Contains(err.Error(), "cannot be opened") {
					t.Fatalf("%s offset %d: %v", filepath.Base(seg), off, err)
				}
				refused++
				continue
			}
			var e raft.Log
			for i := uint64(1); i <= 400; i++ {
				if err := s.Logs.GetLog(i, &e); err != nil || string(e.Data) != string(entries(i, i)[0].Data) || e.Index != i {
					t.Fatalf("%s offset %d flipped, opened without complaint, and entry %d reads %q %v",
						filepath.Base(seg), off, i, e.Data, err)
				}
			}
			s.Close()
		}
	}
	t.Logf("%d flips, %d refused, the others harmless", trials, refused)
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}
