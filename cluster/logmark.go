package cluster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// The log mark is a member's durable memory of how far its raft log
// reached: raft-wal recovers a log that ends early (a truncated or
// damaged segment) without complaint, so without a record kept apart
// from the log, a member that acknowledged entries could restart without
// them, vote, and elect a leader that never had them (issue #19 §2).
//
// The mark file (raft-mark in the raft directory) holds two slots, each
// in a sector of its own; records alternate between them with a rising
// sequence number, so a write torn by a power cut spoils only the slot it
// was writing and the other still holds the previous record. Each record
// carries a CRC-32C. Reading takes the valid slot with the higher
// sequence number.
//
// The file is created whole: written under a temporary name, synced,
// then renamed. So a raft-mark that exists always held a valid record
// once, and one that is empty, zero-filled or otherwise without a valid
// record is damage (how far the log reached is unknown), never the blank
// mark of a new directory, which has no raft-mark at all (issue #34).

const (
	markFileName = "raft-mark"
	// markSlot is the space of one record: a 512-byte sector, so that the
	// two records never share one.
	markSlot = 512
	// markRecordLen is the encoded record: magic, version, seq, stored,
	// writing, owed, term, owed term, CRC (and 4 bytes of padding).
	markRecordLen = 72
	markMagic     = "DFLKMARK"
	// markVersion 2 added the terms; a version 1 record (56 bytes, no
	// terms) still reads, its terms unknown (0).
	markVersion    = 2
	markRecordLen1 = 56
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// mark is one record of the mark file.
type mark struct {
	seq uint64
	// stored: raft was told every entry up to here is stored (StoreLogs
	// returned), so this member may have counted towards committing it.
	stored uint64
	// writing: the last entry of the append that was in flight when this
	// record was written (≥ stored). The record is written concurrently
	// with the append, so after a crash (stored, writing] may be missing
	// legitimately: raft-wal drops a last batch whose write was torn, and
	// raft was never told it was stored.
	writing uint64
	// owed, while the member recovers from damage (--raft-recover): the
	// old stored mark, which its log must reach again before it stands
	// for election (meanwhile it votes only for a candidate whose log
	// reaches it); 0 otherwise.
	owed uint64
	// term and owedTerm are the terms of the entries at stored and owed
	// (0: not known, from a version 1 record or a mark lowered below the
	// log). With owed, owedTerm tells the recovering member which
	// candidates hold every entry it owes (voteguard.go). Either may be
	// higher than the entry's true term, never lower.
	term, owedTerm uint64
}

// appendMark encodes r (markRecordLen bytes) after dst.
func appendMark(dst []byte, r mark) []byte {
	start := len(dst)
	dst = append(dst, markMagic...)
	dst = binary.LittleEndian.AppendUint32(dst, markVersion)
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	dst = binary.LittleEndian.AppendUint64(dst, r.seq)
	dst = binary.LittleEndian.AppendUint64(dst, r.stored)
	dst = binary.LittleEndian.AppendUint64(dst, r.writing)
	dst = binary.LittleEndian.AppendUint64(dst, r.owed)
	dst = binary.LittleEndian.AppendUint64(dst, r.term)
	dst = binary.LittleEndian.AppendUint64(dst, r.owedTerm)
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
	return binary.LittleEndian.AppendUint32(dst, 0)
}

// parseMark decodes one slot, of either version. ok is false for a slot
// that holds no valid record: never written (zeros), torn, or damaged.
func parseMark(b []byte) (r mark, ok bool) {
	if len(b) < markRecordLen1 || string(b[:8]) != markMagic {
		return mark{}, false
	}
	sum := 48 // the bytes the CRC covers, version 1
	switch binary.LittleEndian.Uint32(b[8:]) {
	case 1:
	case markVersion:
		if len(b) < markRecordLen {
			return mark{}, false
		}
		sum = 64
	default:
		return mark{}, false
	}
	if crc32.Checksum(b[:sum], castagnoli) != binary.LittleEndian.Uint32(b[sum:]) {
		return mark{}, false
	}
	r = mark{
		seq:     binary.LittleEndian.Uint64(b[16:]),
		stored:  binary.LittleEndian.Uint64(b[24:]),
		writing: binary.LittleEndian.Uint64(b[32:]),
		owed:    binary.LittleEndian.Uint64(b[40:]),
	}
	if sum == 64 {
		r.term = binary.LittleEndian.Uint64(b[48:])
		r.owedTerm = binary.LittleEndian.Uint64(b[56:])
	}
	return r, r.seq != 0 && r.writing >= r.stored
}

// newestMark is the valid record of the file content b with the highest
// sequence number (seq 0: none).
func newestMark(b []byte) mark {
	var best mark
	for slot := 0; slot*markSlot < len(b); slot++ {
		if r, ok := parseMark(b[slot*markSlot:]); ok && r.seq > best.seq {
			best = r
		}
	}
	return best
}

// markFile is the open mark file. It is not safe for concurrent use: the
// log store serialises its writes.
type markFile struct {
	f    *os.File // nil until create, when openMark found no file
	path string
	// unreadable says what is wrong with a file that holds no valid
	// record (markCorrupt).
	unreadable string
	last       mark // the record written last (its seq is the highest)
	buf        []byte
	syncs      int    // durable writes so far (tests)
	mem        []byte // the file mapped (Linux), once written through
}

// markState is what openMark found.
type markState uint8

const (
	markFound   markState = iota // a valid record
	markAbsent                   // no file: a new directory, or one written before marks existed
	markCorrupt                  // a file without a valid record: empty, zeros, or both slots damaged
)

// openMark opens the mark file in dir, if there is one, and reads it.
// Unless it was markFound, the caller starts it with create.
func openMark(dir string) (*markFile, markState, error) {
	path := filepath.Join(dir, markFileName)
	m := &markFile{path: path, buf: make([]byte, 0, markRecordLen)}
	// A temporary file left by a create that never reached its rename
	// is of no use.
	if err := os.Remove(path + markTempSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, 0, err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return m, markAbsent, nil
	}
	if err != nil {
		return nil, 0, err
	}
	m.f = f
	b := make([]byte, 2*markSlot)
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		f.Close()
		return nil, 0, fmt.Errorf("read %s: %w", path, err)
	}
	b = b[:n]
	m.last = newestMark(b)
	switch {
	case m.last.seq != 0:
		return m, markFound, nil
	case n == 0:
		m.unreadable = path + " is empty"
	case len(bytes.Trim(b, "\x00")) == 0:
		m.unreadable = path + " holds only zero bytes"
	default:
		m.unreadable = path + " holds no valid record (both of its slots fail their checksum)"
	}
	return m, markCorrupt, nil
}

// markTempSuffix names the file create writes before renaming it.
const markTempSuffix = ".tmp"

// create starts a new (or replacing) mark file with r: both slots are
// written under a temporary name, r in the first, synced, and renamed
// into place, the rename made durable. So the file exists only whole.
func (m *markFile) create(r mark) error {
	r.seq = 1
	b := appendMark(make([]byte, 0, 2*markSlot), r)
	b = b[:2*markSlot] // the second slot blank: zeros
	tmp := m.path + markTempSuffix
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, m.path); err != nil {
		f.Close()
		return err
	}
	if err := syncDir(filepath.Dir(m.path)); err != nil {
		f.Close()
		return fmt.Errorf("fsync the directory of %s: %w", m.path, err)
	}
	// The renamed file replaces the one read, if any (and its mapping).
	if m.f != nil {
		m.unmap()
		_ = m.f.Close()
	}
	m.f, m.last, m.unreadable = f, r, ""
	return nil
}

// write stores r as the next record, in the slot the previous one did not
// use (record n goes to slot (n-1)%2). With durable it returns once the record is on disk (fdatasync: the
// file's size and blocks never change after create, so no metadata need
// be flushed); without, the record reaches the page cache, which a
// process crash does not lose, and the disk with the next durable write.
func (m *markFile) write(r mark, durable bool) error {
	r.seq = m.last.seq + 1
	m.buf = appendMark(m.buf[:0], r)
	if err := m.store(int64((r.seq-1)%2)*markSlot, m.buf); err != nil {
		return fmt.Errorf("write %s: %w", m.path, err)
	}
	// The record counts as written even if the sync fails: its slot is
	// spent either way, and the next record takes the other one.
	m.last = r
	if durable {
		if err := m.flush(); err != nil {
			return fmt.Errorf("fdatasync %s: %w", m.path, err)
		}
		m.syncs++
	}
	return nil
}

func (m *markFile) close() error {
	m.unmap()
	if m.f == nil {
		return nil
	}
	return m.f.Close()
}

// syncDir makes a new directory entry in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// LogMark is what a raft directory's mark file says (ReadLogMark).
type LogMark struct {
	// Stored: the member had acknowledged storing every entry up to here.
	Stored uint64
	// Owed: while it recovers from damage (--raft-recover), the index its
	// log must reach again before it votes; 0 otherwise.
	Owed uint64
}

// ReadLogMark reads the mark of the raft directory dir without opening
// the directory, which a running member may hold: for inspection and
// tests. ok is false when there is no valid record.
func ReadLogMark(dir string) (m LogMark, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, markFileName))
	if err != nil {
		return LogMark{}, false, err
	}
	r := newestMark(b)
	return LogMark{Stored: r.stored, Owed: r.owed}, r.seq != 0, nil
}
