// Package snapfile is the format of a backup of a cluster's replicated
// state (dflockctl snapshot save, dflockd snapshot restore): a header
// naming what the state is, the state itself (the cluster FSM's own
// snapshot, cluster/fsm.go) and a SHA-256 of everything before it.
//
//	"DFLKSNAP"                 magic
//	uint32 big-endian          format version (Version)
//	uint32 big-endian, bytes   header length, header (JSON: Header)
//	uint64 big-endian, bytes   state length, state
//	32 bytes                   SHA-256 of all the bytes above
//
// The lengths come first so that a reader knows the whole size after the
// header (a progress bar) and refuses a truncated file before trusting a
// byte of the state. The package does no I/O of its own beyond the reader
// and writer it is given, holds no state, and knows nothing of raft or the
// engine: the state is opaque bytes here.
package snapfile

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
)

// Magic starts every snapshot file.
const Magic = "DFLKSNAP"

// Version is the format version this package writes and reads.
const Version = 1

// RestoreFenceMargin is what a restore adds to the header's Fence for
// the floor of the restored cluster's fences (which also stay above the
// restoring machine's wall clock in ns): a bound on the fences the
// backup's source issued after the backup when that clock is behind the
// source's (2^40: twelve days of a million grants a second, and a
// thousandth of the fences left).
const RestoreFenceMargin = 1 << 40

// Limits on what a reader accepts before it has verified the checksum.
const (
	// maxHeader: a header is a few hundred bytes (members: a few dozen).
	maxHeader = 1 << 20
	// maxState: the state is read into memory whole (a restore decodes it
	// whole); far beyond any state a server holds in memory today.
	maxState = 64 << 30
)

// Errors a reader returns, wrapped with what it found.
var (
	// ErrNotSnapshot: the bytes do not start with Magic.
	ErrNotSnapshot = errors.New("snapfile: not a dflockd snapshot file")
	// ErrVersion: a format version this build does not read.
	ErrVersion = errors.New("snapfile: unknown format version")
	// ErrDamaged: truncated, or the checksum does not match.
	ErrDamaged = errors.New("snapfile: damaged")
)

// Member is one member of the cluster the snapshot was taken from.
type Member struct {
	ID       string `json:"id"`
	Address  string `json:"address"`  // raft address
	Suffrage string `json:"suffrage"` // Voter, Nonvoter, Staging
}

// Header names the state a file holds.
type Header struct {
	// ServerVersion is the version of the server that took it.
	ServerVersion string `json:"server_version"`
	// Created is when it was taken (the server's wall clock, RFC 3339).
	Created string `json:"created"`
	// Index and Term are those of the last log entry the state applied.
	Index uint64 `json:"index"`
	Term  uint64 `json:"term"`
	// Members is the raft configuration at Index.
	Members []Member `json:"members"`
	// Digest is the hash of the replicated state at Index (hex, as
	// /v1/stats's cluster state_digest), from the server's live state: a
	// restore checks that the state decodes to it.
	Digest string `json:"digest"`
	// Fence is the last fence issued at Index.
	Fence uint64 `json:"fence"`
	// Keys and LocksHeld summarise the state (engine.Census).
	Keys      int `json:"keys"`
	LocksHeld int `json:"locks_held"`
}

// size is the length of a file holding header h (encoded as hdr) and n
// bytes of state.
func size(hdr []byte, n int64) int64 {
	return int64(len(Magic)) + 4 + 4 + int64(len(hdr)) + 8 + n + sha256.Size
}

// Write writes a snapshot file of h and state to w.
func Write(w io.Writer, h *Header, state []byte) error {
	hdr, err := json.Marshal(h)
	if err != nil {
		return err
	}
	sum := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, sum), 64<<10)
	bw.WriteString(Magic)
	var b [8]byte
	bw.Write(binary.BigEndian.AppendUint32(b[:0], Version))
	bw.Write(binary.BigEndian.AppendUint32(b[:0], uint32(len(hdr))))
	bw.Write(hdr)
	bw.Write(binary.BigEndian.AppendUint64(b[:0], uint64(len(state))))
	bw.Write(state)
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err = w.Write(sum.Sum(nil))
	return err
}

// Info is what Read found besides the state.
type Info struct {
	Header  Header
	Version int    // format version
	Size    int64  // the file's length in bytes
	Sum     string // its SHA-256 (hex), the trailer
}

// Read reads and verifies a whole snapshot file from r: its magic,
// version, lengths and checksum. progress, if not nil, is called as bytes
// arrive with how many have been read and the file's length (0 until the
// header is read). The state returned is valid only if err is nil.
func Read(r io.Reader, progress func(done, total int64)) (Info, []byte, error) {
	var info Info
	sum := sha256.New()
	cr := &countReader{r: bufio.NewReaderSize(r, 64<<10), h: sum, progress: progress}
	var fixed [len(Magic) + 8]byte
	if _, err := io.ReadFull(cr, fixed[:]); err != nil {
		if cr.n < int64(len(Magic)) || string(fixed[:len(Magic)]) != Magic {
			return info, nil, fmt.Errorf("%w (%d bytes)", ErrNotSnapshot, cr.n)
		}
		return info, nil, fmt.Errorf("%w: truncated in its header: %w", ErrDamaged, err)
	}
	if string(fixed[:len(Magic)]) != Magic {
		return info, nil, ErrNotSnapshot
	}
	info.Version = int(binary.BigEndian.Uint32(fixed[len(Magic):]))
	if info.Version != Version {
		return info, nil, fmt.Errorf("%w %d (this build reads %d)", ErrVersion, info.Version, Version)
	}
	hl := binary.BigEndian.Uint32(fixed[len(Magic)+4:])
	if hl > maxHeader {
		return info, nil, fmt.Errorf("%w: header length %d", ErrDamaged, hl)
	}
	hdr := make([]byte, hl)
	var sl [8]byte
	if _, err := io.ReadFull(cr, hdr); err != nil {
		return info, nil, fmt.Errorf("%w: truncated in its header: %w", ErrDamaged, err)
	}
	if _, err := io.ReadFull(cr, sl[:]); err != nil {
		return info, nil, fmt.Errorf("%w: truncated in its header: %w", ErrDamaged, err)
	}
	n := binary.BigEndian.Uint64(sl[:])
	if n > maxState {
		return info, nil, fmt.Errorf("%w: state length %d", ErrDamaged, n)
	}
	info.Size = size(hdr, int64(n))
	cr.total = info.Size
	// Grown as the bytes arrive, not sized by the unverified length: a
	// damaged length must not allocate what the file does not hold.
	var sb bytes.Buffer
	if _, err := io.CopyN(&sb, cr, int64(n)); err != nil {
		return info, nil, fmt.Errorf("%w: truncated: %d of %d bytes: %w", ErrDamaged, cr.n, info.Size, err)
	}
	state := sb.Bytes()
	want := sum.Sum(nil)
	var got [sha256.Size]byte
	if _, err := io.ReadFull(cr, got[:]); err != nil {
		return info, nil, fmt.Errorf("%w: truncated: %d of %d bytes: %w", ErrDamaged, cr.n, info.Size, err)
	}
	if string(got[:]) != string(want) {
		return info, nil, fmt.Errorf("%w: checksum mismatch (SHA-256 %x, trailer says %x)", ErrDamaged, want, got)
	}
	if _, err := cr.Read(sl[:1]); err != io.EOF {
		return info, nil, fmt.Errorf("%w: bytes after its checksum", ErrDamaged)
	}
	if err := json.Unmarshal(hdr, &info.Header); err != nil {
		return info, nil, fmt.Errorf("%w: header: %w", ErrDamaged, err)
	}
	info.Sum = fmt.Sprintf("%x", got)
	return info, state, nil
}

// countReader hashes and counts what it reads (until the trailer: the
// hash is taken before it is read) and reports progress.
type countReader struct {
	r        io.Reader
	h        hash.Hash
	n, total int64
	progress func(done, total int64)
}

func (c *countReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	if k > 0 {
		hashed := int64(k)
		if c.total > 0 {
			hashed = max(0, min(hashed, c.total-sha256.Size-c.n))
		}
		c.h.Write(p[:hashed])
		c.n += int64(k)
		if c.progress != nil {
			c.progress(c.n, c.total)
		}
	}
	return k, err
}
