package snapfile

import (
	"bytes"
	"errors"
	"testing"
)

func sample(t *testing.T) ([]byte, *Header, []byte) {
	t.Helper()
	h := &Header{ServerVersion: "test", Created: "2026-11-29T08:00:00Z", Index: 42, Term: 3,
		Members: []Member{{ID: "n1", Address: "127.0.0.1:7001", Suffrage: "Voter"}},
		Digest:  "abcd", Fence: 1 << 60, Keys: 7, LocksHeld: 2}
	state := bytes.Repeat([]byte("state-"), 1000)
	var b bytes.Buffer
	if err := Write(&b, h, state); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), h, state
}

func TestRoundTrip(t *testing.T) {
	file, h, state := sample(t)
	var last, total int64
	info, got, err := Read(bytes.NewReader(file), func(d, n int64) { last, total = d, n })
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, state) || info.Header.Index != h.Index || info.Header.Members[0] != h.Members[0] ||
		info.Header.Fence != h.Fence || info.Version != Version {
		t.Fatalf("read back %+v", info)
	}
	if info.Size != int64(len(file)) || last != info.Size || total != info.Size {
		t.Fatalf("size %d, progress %d/%d, file %d bytes", info.Size, last, total, len(file))
	}
}

// Every flipped byte, anywhere, is refused; so is every truncation.
func TestDamageRefused(t *testing.T) {
	file, _, _ := sample(t)
	for i := range file {
		b := bytes.Clone(file)
		b[i] ^= 0x20
		if _, _, err := Read(bytes.NewReader(b), nil); err == nil {
			t.Fatalf("byte %d flipped: read without error", i)
		}
	}
	for n := 0; n < len(file); n += 1 + n/50 {
		_, _, err := Read(bytes.NewReader(file[:n]), nil)
		if err == nil {
			t.Fatalf("truncated to %d bytes: read without error", n)
		}
		if n >= len(Magic) && !errors.Is(err, ErrDamaged) {
			t.Fatalf("truncated to %d bytes: %v, want ErrDamaged", n, err)
		}
	}
	if _, _, err := Read(bytes.NewReader(append(bytes.Clone(file), 0)), nil); !errors.Is(err, ErrDamaged) {
		t.Fatalf("a byte appended: %v, want ErrDamaged", err)
	}
	if _, _, err := Read(bytes.NewReader([]byte("not a snapshot at all")), nil); !errors.Is(err, ErrNotSnapshot) {
		t.Fatalf("not a snapshot: %v", err)
	}
}

// FuzzRead: no input crashes the reader; what it accepts is exactly one
// whole file, its state within it.
func FuzzRead(f *testing.F) {
	var b bytes.Buffer
	if err := Write(&b, &Header{Index: 1, Digest: "d"}, []byte("state")); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add([]byte(Magic))
	f.Add(append([]byte(Magic), 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff))
	f.Fuzz(func(t *testing.T, data []byte) {
		info, state, err := Read(bytes.NewReader(data), nil)
		if err != nil {
			return
		}
		if info.Size != int64(len(data)) || len(state) >= len(data) {
			t.Fatalf("accepted %d bytes as a file of %d with %d of state", len(data), info.Size, len(state))
		}
	})
}
