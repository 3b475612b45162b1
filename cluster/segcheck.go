package cluster

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
)

// Verifying raft-wal's segment files against the checksums they already
// carry.
//
// raft-wal appends a batch of entries per fsync and ends it with a commit
// frame holding a CRC-32C over every byte written since the previous
// commit frame (the first batch's includes the file header). It checks
// that CRC for the tail segment's last batch only, at open, to tell a
// torn write; sealed segments and earlier batches are read back
// unchecked (its README, "Our Assumptions" 1: latent corruption is left
// to the disk). So a flipped byte inside an entry decodes into a wrong
// entry, or fails to decode, at runtime, where raft panics (applying, or
// scanning the log for configurations in NewRaft) or retries forever
// (replicating to a follower). Here every batch that holds a live entry
// is checked at startup, in every segment, by reading the files the way
// raft-wal's README documents them (file header, 8-byte aligned frames:
// entry, index, commit), for raft-wal v0.4.2's format version 0.
//
// No per-entry checksum of our own is added: the commit CRCs already
// cover every byte, and the directories written before this check are
// covered the same way. (A raft-wal codec of our own is not possible in
// v0.4.2 anyway: new segments are always labelled with the built-in
// codec's ID, and Open then refuses a WAL whose codec ID differs.)

// Frame types and sizes of raft-wal's segment format.
const (
	segHeaderLen   = 32
	segMagic       = 0x58eb6b0d
	segVersion     = 0
	frameHeaderLen = 8
	frameEntry     = 1
	frameIndex     = 2
	frameCommit    = 3
)

// segDamage is where a segment first fails its checks.
type segDamage struct {
	index uint64 // first live entry not covered by a valid batch
	why   string
}

// checkSegment reads the segment file of si in dir and verifies every
// batch holding a live entry, those in [lo, hi]. A batch whose commit CRC
// does not match, or frames that end (zeros, end of file, an invalid
// header) before every live entry has been covered by a matching commit,
// are damage: the first live entry so left unverified is returned.
// Batches of dead entries (compacted away, or beyond a tail truncation
// or a torn final write) are not held against the log.
func checkSegment(dir string, si types.SegmentInfo, lo, hi uint64) (*segDamage, error) {
	name := segment.FileName(si)
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	damaged := func(idx uint64, format string, args ...any) (*segDamage, error) {
		return &segDamage{index: idx, why: fmt.Sprintf("segment %s: ", name) + fmt.Sprintf(format, args...)}, nil
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 1<<20)
	hdr := make([]byte, segHeaderLen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return damaged(lo, "no file header (%v)", err)
	}
	if binary.LittleEndian.Uint32(hdr[0:]) != segMagic || hdr[7] != segVersion {
		return damaged(lo, "not a raft-wal format %d file header", segVersion)
	}
	if binary.LittleEndian.Uint64(hdr[8:]) != si.BaseIndex || binary.LittleEndian.Uint64(hdr[16:]) != si.ID {
		return damaged(lo, "file header names base index %d id %d, the WAL's metadata %d %d",
			binary.LittleEndian.Uint64(hdr[8:]), binary.LittleEndian.Uint64(hdr[16:]), si.BaseIndex, si.ID)
	}
	crc := crc32.Checksum(hdr, castagnoli)
	var (
		off     = int64(segHeaderLen)
		next    = si.BaseIndex // index of the next entry frame
		batchLo = next         // first entry of the current batch
		buf     []byte
		fh      [frameHeaderLen]byte
	)
	for next <= hi || next > batchLo { // live entries left, or a batch with some to commit
		if _, err := io.ReadFull(r, fh[:]); err != nil {
			return damaged(max(batchLo, lo), "frames end at offset %d (end of file) before entry %d", off, hi)
		}
		typ, n := fh[0], binary.LittleEndian.Uint32(fh[4:])
		if typ == frameCommit {
			// A batch of dead entries only may fail: nothing reads it. (An
			// index frame written alone, when a tail truncation seals the
			// segment, is checked by reading every entry through it.)
			if n != crc && next > batchLo && batchLo <= hi && next > lo {
				return damaged(max(batchLo, lo), "checksum mismatch in the batch of entries %d..%d (commit frame at offset %d)", batchLo, next-1, off)
			}
			off += frameHeaderLen
			crc, batchLo = 0, next
			if next > hi {
				return nil, nil
			}
			continue
		}
		if typ != frameEntry && typ != frameIndex {
			what := "zeros"
			if fh != [frameHeaderLen]byte{} {
				what = fmt.Sprintf("an invalid frame header (type %d)", typ)
			}
			return damaged(max(batchLo, lo), "frames end at offset %d (%s) before entry %d", off, what, hi)
		}
		total := int64(n) + int64(pad8(n))
		if n > segment.MaxEntrySize || off+frameHeaderLen+total > size {
			return damaged(max(batchLo, lo), "frame at offset %d claims %d bytes", off, n)
		}
		if int64(cap(buf)) < total {
			buf = make([]byte, total)
		}
		b := buf[:total]
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, fmt.Errorf("read segment %s at offset %d: %w", name, off, err)
		}
		crc = crc32.Update(crc32.Update(crc, castagnoli, fh[:]), castagnoli, b)
		off += frameHeaderLen + total
		if typ == frameEntry {
			next++
		}
	}
	return nil, nil
}

// pad8 is the zero padding after a frame payload of n bytes.
func pad8(n uint32) uint32 { return (frameHeaderLen - n%frameHeaderLen) % frameHeaderLen }
