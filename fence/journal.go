package fence

import (
	"encoding/binary"
	"fmt"
	"hash/crc64"
)

// On-disk layout of dflockd's --fence-state-file (spec §C.4, §C.5). Every
// integer is unsigned big-endian.
const (
	legacySize  = 8                  // generation 1: the bare ceiling
	recordSize  = 32                 // magic ‖ seq ‖ ceiling ‖ CRC of bytes 0–23
	journalSize = 2 * recordSize     // two slots; the file is preallocated to this
	crcOffset   = 24                 // the checksum covers every byte before it
	magic       = "dflfnc1\n"        // bytes 0–7 of a record
	magicWord   = 0x64666c666e63310a // magic read as a big-endian uint64
	noRecord    = -1                 // slot of a state that has no journal record
	maxFence    = ^uint64(0)         // 2^64−1: a ceiling may reach it, a fence never does
)

// crcTable is CRC-64/GO-ISO (Go's hash/crc64 with the ISO 3309 polynomial),
// the checksum dflockd writes; check("123456789") = 0xb90956c775a41001.
var crcTable = crc64.MakeTable(crc64.ISO)

// record is one journal entry: every fence issued while it was the newest
// durable record is below ceiling.
type record struct {
	seq     uint64
	ceiling uint64
}

// slotOf is where record seq lives: odd seq in slot 0, even seq in slot 1.
func slotOf(seq uint64) int { return int((seq - 1) % 2) }

// encodeRecord fills b (recordSize bytes) with r.
func encodeRecord(b []byte, r record) {
	_ = b[recordSize-1]
	binary.BigEndian.PutUint64(b[0:], magicWord)
	binary.BigEndian.PutUint64(b[8:], r.seq)
	binary.BigEndian.PutUint64(b[16:], r.ceiling)
	binary.BigEndian.PutUint64(b[crcOffset:], crc64.Checksum(b[:crcOffset], crcTable))
}

// decodeRecord reports the record in b (recordSize bytes) if its magic and
// checksum are intact.
func decodeRecord(b []byte) (record, bool) {
	_ = b[recordSize-1]
	if string(b[:8]) != magic {
		return record{}, false
	}
	if binary.BigEndian.Uint64(b[crcOffset:]) != crc64.Checksum(b[:crcOffset], crcTable) {
		return record{}, false
	}
	return record{seq: binary.BigEndian.Uint64(b[8:]), ceiling: binary.BigEndian.Uint64(b[16:])}, true
}

// state is what a state file says before the wall clock is considered.
type state struct {
	newest  record // largest seq; seq 0 when the file is empty or legacy
	slot    int    // slot holding newest, or noRecord
	legacy  bool   // 8-byte generation-1 file: newest.ceiling is its value
	records int    // valid journal records found (0, 1 or 2)
	// ceiling bounds every fence any earlier incarnation issued: the
	// largest ceiling of all valid records. dflockd uses newest.ceiling;
	// the two agree for every file dflockd writes, and the larger one is
	// the safe choice for a hand-edited file.
	ceiling uint64
}

// nextSeq is the sequence number of the first record this incarnation
// writes. It normally goes to the slot not holding the newest record; a
// hand-made file whose newest record sits in the other parity's slot gets
// seq+2 so that the write still lands in the other slot.
func (s state) nextSeq() uint64 {
	seq := s.newest.seq + 1
	if s.slot != noRecord && slotOf(seq) == s.slot {
		seq++
	}
	return seq
}

// decodeState interprets the whole content of a state file. Any size but
// 0, 8, 32 or 64, or a journal with no valid record, is ErrCorrupt: the
// allocator must not guess a ceiling it cannot prove.
func decodeState(b []byte) (state, error) {
	switch len(b) {
	case 0:
		return state{slot: noRecord}, nil
	case legacySize:
		c := binary.BigEndian.Uint64(b)
		return state{newest: record{ceiling: c}, slot: noRecord, legacy: true, ceiling: c}, nil
	case recordSize, journalSize:
	default:
		return state{}, fmt.Errorf("%w: size %d bytes, want 0, 8, 32 or 64", ErrCorrupt, len(b))
	}
	s := state{slot: noRecord}
	for slot := 0; slot*recordSize < len(b); slot++ {
		r, ok := decodeRecord(b[slot*recordSize : (slot+1)*recordSize])
		if !ok {
			continue
		}
		s.records++
		s.ceiling = max(s.ceiling, r.ceiling)
		if s.slot == noRecord || r.seq > s.newest.seq {
			s.newest, s.slot = r, slot
		}
	}
	if s.records == 0 {
		return state{}, fmt.Errorf("%w: no record with valid magic and CRC-64 in %d bytes", ErrCorrupt, len(b))
	}
	return s, nil
}

// addSat is a+b, or maxFence when that overflows.
func addSat(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return maxFence
}
