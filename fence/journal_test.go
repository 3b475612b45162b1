package fence

import (
	"bytes"
	"errors"
	"hash/crc64"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

func TestCRCCheckValue(t *testing.T) {
	const check uint64 = 0xb90956c775a41001 // CRC-64/GO-ISO of "123456789"
	if got := crcISOBitwise([]byte("123456789")); got != check {
		t.Fatalf("bitwise CRC = %#x, want %#x", got, check)
	}
	if got := crc64.Checksum([]byte("123456789"), crcTable); got != check {
		t.Fatalf("package CRC = %#x, want %#x", got, check)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		b := make([]byte, r.IntN(64))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if x, y := crcISOBitwise(b), crc64.Checksum(b, crcTable); x != y {
			t.Fatalf("CRC of %x: bitwise %#x, table %#x", b, x, y)
		}
	}
}

func TestEncodeRecordMatchesSpecVectors(t *testing.T) {
	for _, tc := range []struct {
		r   record
		hex string
	}{
		{record{seq: 1, ceiling: 1048576}, vecSeq1Hex},
		{record{seq: 2, ceiling: vecSeq2Ceiling}, vecSeq2Hex},
	} {
		var b [recordSize]byte
		encodeRecord(b[:], tc.r)
		if want := mustHex(t, tc.hex); !bytes.Equal(b[:], want) {
			t.Errorf("encodeRecord(%+v) = %x, want %x", tc.r, b, want)
		}
		got, ok := decodeRecord(b[:])
		if !ok || got != tc.r {
			t.Errorf("decodeRecord(%x) = %+v, %v", b, got, ok)
		}
	}
}

// The checked-in golden files are the spec's vectors, byte for byte, and
// both decoders read them the same way.
func TestGoldenFilesRead(t *testing.T) {
	seq1, seq2 := mustHex(t, vecSeq1Hex), mustHex(t, vecSeq2Hex)
	for _, tc := range []struct {
		file    string
		want    []byte
		newest  record
		slot    int
		legacy  bool
		records int
	}{
		{"journal-seq1.bin", seq1, record{1, 1048576}, 0, false, 1},
		{"journal-seq2.bin", append(append([]byte(nil), seq1...), seq2...), record{2, vecSeq2Ceiling}, 1, false, 2},
		{"legacy.bin", mustHex(t, "183c787522ab0000"), record{0, vecSeq2Ceiling}, noRecord, true, 0},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b := readFile(t, filepath.Join("testdata", tc.file))
			if !bytes.Equal(b, tc.want) {
				t.Fatalf("golden file %s = %x, want the spec's %x", tc.file, b, tc.want)
			}
			st, err := decodeState(b)
			if err != nil {
				t.Fatal(err)
			}
			if st.newest != tc.newest || st.slot != tc.slot || st.legacy != tc.legacy || st.records != tc.records || st.ceiling != tc.newest.ceiling {
				t.Fatalf("decodeState = %+v, want newest %+v slot %d legacy %v records %d", st, tc.newest, tc.slot, tc.legacy, tc.records)
			}
			if tc.legacy {
				return
			}
			slots := decodeSlotsIndependently(t, b)
			last := slots[len(slots)-1]
			if !last.Valid || last.Seq != tc.newest.seq || last.Ceiling != tc.newest.ceiling {
				t.Fatalf("independent decoder: newest slot %+v, want %+v", last, tc.newest)
			}
		})
	}
}

// What Open writes is byte-identical to what dflockd writes: continuing
// the seq=1 golden file at the vector's clock produces the seq=2 golden
// file exactly, and the next restart goes on in slot 0.
func TestGoldenFilesWritten(t *testing.T) {
	if !durableSupported {
		t.Skip("durable files need Linux")
	}
	p := stateIn(t, readFile(t, "testdata/journal-seq1.bin"))
	a, err := Open(p, Options{Now: clockAt(vecClock), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if v := mustNext(t, a); v != vecClock+1 {
		t.Fatalf("first fence = %d, want %d", v, uint64(vecClock+1))
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, p)
	if want := readFile(t, "testdata/journal-seq2.bin"); !bytes.Equal(got, want) {
		t.Fatalf("file after Open =\n%x\nwant golden journal-seq2.bin\n%x", got, want)
	}

	// Restart with the clock behind the file: seed = recovered ceiling.
	a = mustOpen(t, p, Options{Now: clockAt(vecClock - 1e9)})
	if v := mustNext(t, a); v != vecSeq2Ceiling+1 {
		t.Fatalf("first fence after restart = %d, want %d", v, uint64(vecSeq2Ceiling+1))
	}
	slots := decodeSlotsIndependently(t, readFile(t, p))
	want := []diskRecord{{true, 3, vecSeq2Ceiling + DefaultWindow}, {true, 2, vecSeq2Ceiling}}
	if slots[0] != want[0] || slots[1] != want[1] {
		t.Fatalf("slots after restart = %+v, want %+v", slots, want)
	}
}

func TestDecodeStateSizesAndCorruption(t *testing.T) {
	seq1, seq2 := mustHex(t, vecSeq1Hex), mustHex(t, vecSeq2Hex)
	both := append(append([]byte(nil), seq1...), seq2...)
	flip := func(b []byte, i int) []byte {
		c := append([]byte(nil), b...)
		c[i] ^= 0x10
		return c
	}
	valid := []struct {
		name   string
		b      []byte
		newest record
		slot   int
	}{
		{"empty", []byte{}, record{}, noRecord},
		{"slot 1 zero (preallocated)", append(append([]byte(nil), seq1...), make([]byte, 32)...), record{1, 1048576}, 0},
		{"slot 1 corrupt", flip(both, 40), record{1, 1048576}, 0},
		{"slot 0 corrupt", flip(both, 3), record{2, vecSeq2Ceiling}, 1},
		{"slots swapped", append(append([]byte(nil), seq2...), seq1...), record{2, vecSeq2Ceiling}, 0},
	}
	for _, tc := range valid {
		st, err := decodeState(tc.b)
		if err != nil || st.newest != tc.newest || st.slot != tc.slot {
			t.Errorf("%s: decodeState = %+v, %v; want newest %+v in slot %d", tc.name, st, err, tc.newest, tc.slot)
		}
	}
	// Every single-bit flip anywhere in slot 1 falls back to slot 0, and
	// anywhere in slot 0 keeps slot 1.
	for i := range 64 {
		for bit := range 8 {
			c := append([]byte(nil), both...)
			c[i] ^= 1 << bit
			st, err := decodeState(c)
			want := record{1, 1048576}
			if i < 32 {
				want = record{2, vecSeq2Ceiling}
			}
			if err != nil || st.newest != want || st.records != 1 {
				t.Fatalf("flip byte %d bit %d: %+v, %v; want %+v", i, bit, st, err, want)
			}
		}
	}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"size 17", make([]byte, 17)},
		{"size 1", make([]byte, 1)},
		{"size 33", append(append([]byte(nil), seq1...), 0)},
		{"zeros 32", make([]byte, 32)},
		{"zeros 64", make([]byte, 64)},
		{"both corrupt", flip(flip(both, 5), 50)},
		{"only slot corrupt", flip(seq1, 31)},
	} {
		if st, err := decodeState(tc.b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: decodeState = %+v, %v; want ErrCorrupt", tc.name, st, err)
		}
	}
}

func TestNextSeqAvoidsNewestSlot(t *testing.T) {
	for _, tc := range []struct {
		st   state
		want uint64
	}{
		{state{slot: noRecord}, 1},
		{state{slot: noRecord, legacy: true}, 1},
		{state{newest: record{seq: 1}, slot: 0}, 2},
		{state{newest: record{seq: 2}, slot: 1}, 3},
		{state{newest: record{seq: 2}, slot: 0}, 4}, // hand-made file: seq 3 would overwrite it
		{state{newest: record{seq: 7}, slot: 1}, 9},
	} {
		got := tc.st.nextSeq()
		if got != tc.want {
			t.Errorf("nextSeq(%+v) = %d, want %d", tc.st, got, tc.want)
		}
		if tc.st.slot != noRecord && slotOf(got) == tc.st.slot {
			t.Errorf("nextSeq(%+v) = %d writes over the newest record", tc.st, got)
		}
	}
}
