package cluster

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
)

func TestMarkRoundTrip(t *testing.T) {
	r := mark{seq: 7, stored: 100, writing: 164, owed: 90, term: 4, owedTerm: 3}
	b := appendMark(nil, r)
	if len(b) != markRecordLen {
		t.Fatalf("encoded %d bytes, want %d", len(b), markRecordLen)
	}
	got, ok := parseMark(b)
	if !ok || got != r {
		t.Fatalf("parse: %+v %v, want %+v", got, ok, r)
	}
	for i := range 64 + 4 { // every byte the checksum covers, and the checksum
		c := append([]byte(nil), b...)
		c[i] ^= 0x10
		if _, ok := parseMark(c); ok {
			t.Fatalf("byte %d flipped: still parses", i)
		}
	}
	if _, ok := parseMark(make([]byte, markRecordLen)); ok {
		t.Fatal("a blank slot parses")
	}
}

// TestMarkVersion1Reads: a record written before the terms were (version
// 1, 56 bytes) still reads, its terms unknown.
func TestMarkVersion1Reads(t *testing.T) {
	b := []byte(markMagic)
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint32(b, 0)
	for _, v := range []uint64{7, 100, 164, 90} { // seq, stored, writing, owed
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	b = binary.LittleEndian.AppendUint32(b, 0)
	if len(b) != markRecordLen1 {
		t.Fatalf("version 1 record of %d bytes", len(b))
	}
	got, ok := parseMark(append(b, make([]byte, markSlot-len(b))...))
	if want := (mark{seq: 7, stored: 100, writing: 164, owed: 90}); !ok || got != want {
		t.Fatalf("version 1 record: %+v %v, want %+v", got, ok, want)
	}
	b[40] ^= 1
	if _, ok := parseMark(b); ok {
		t.Fatal("a damaged version 1 record parses")
	}
}

// TestMarkSlotsAlternate: records alternate between the slots, the newer
// valid one wins, and a torn newer one leaves the older.
func TestMarkSlotsAlternate(t *testing.T) {
	dir := t.TempDir()
	m, st, err := openMark(dir)
	if err != nil || st != markAbsent {
		t.Fatalf("new file: %v %v", st, err)
	}
	if err := m.create(mark{stored: 5, writing: 5}); err != nil {
		t.Fatal(err)
	}
	if err := m.write(mark{stored: 5, writing: 9}, true); err != nil {
		t.Fatal(err)
	}
	if err := m.write(mark{stored: 9, writing: 9}, false); err != nil {
		t.Fatal(err)
	}
	m.close()
	reopen := func() (mark, markState) {
		t.Helper()
		m, st, err := openMark(dir)
		if err != nil {
			t.Fatal(err)
		}
		m.close()
		return m.last, st
	}
	if got, st := reopen(); st != markFound || got != (mark{seq: 3, stored: 9, writing: 9}) {
		t.Fatalf("reopened: %+v %v", got, st)
	}
	path := filepath.Join(dir, markFileName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 2*markSlot {
		t.Fatalf("file is %d bytes, want %d", len(b), 2*markSlot)
	}
	// Record 3 sits in slot 0 (records 1 and 3), record 2 in slot 1.
	b[20] ^= 1
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, st := reopen(); st != markFound || got != (mark{seq: 2, stored: 5, writing: 9}) {
		t.Fatalf("slot 0 torn: %+v %v, want record 2", got, st)
	}
	b[markSlot+20] ^= 1
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, st := reopen(); st != markCorrupt {
		t.Fatalf("both slots torn: %v, want markCorrupt", st)
	}
}
