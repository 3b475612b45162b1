//go:build linux

package fence

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

func TestOpenCreatesJournal(t *testing.T) {
	p := filepath.Join(t.TempDir(), "new.state")
	const clock = 1_700_000_000_000_000_000
	a := mustOpen(t, p, Options{Now: clockAt(clock), Window: 1000})
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 64 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file size %d mode %v, want 64 bytes, 0600", fi.Size(), fi.Mode().Perm())
	}
	slots := decodeSlotsIndependently(t, readFile(t, p))
	if want := (diskRecord{true, 1, clock + 1000}); slots[0] != want || slots[1] != (diskRecord{}) {
		t.Fatalf("slots = %+v, want [%+v, zero]", slots, want)
	}
	if v := mustNext(t, a); v != clock+1 {
		t.Fatalf("first fence %d, want %d", v, clock+1)
	}
	st := a.Stats()
	if !st.Durable || st.Failed || st.Seed != clock || st.Ceiling != clock+1000 || st.Seq != 1 || st.Persists != 1 || st.Last != clock+1 {
		t.Fatalf("Stats = %+v", st)
	}
}

func TestCorruptSlotRecovery(t *testing.T) {
	both := readFile(t, "testdata/journal-seq2.bin")
	t.Run("slot 1 corrupt", func(t *testing.T) {
		b := append([]byte(nil), both...)
		b[32+17] ^= 0xff // inside slot 1's ceiling
		p := stateIn(t, b)
		const clock = 1_000_000 // old clock: the seed comes from slot 0
		a := mustOpen(t, p, Options{Now: clockAt(clock), Window: 100})
		if v := mustNext(t, a); v != 1048577 {
			t.Fatalf("first fence %d, want 1048577 (slot 0 ceiling + 1)", v)
		}
		slots := decodeSlotsIndependently(t, readFile(t, p))
		if slots[0] != (diskRecord{true, 1, 1048576}) || slots[1] != (diskRecord{true, 2, 1048576 + 100}) {
			t.Fatalf("slots = %+v; want slot 0 untouched and slot 1 rewritten as seq 2", slots)
		}
	})
	t.Run("slot 0 corrupt", func(t *testing.T) {
		b := append([]byte(nil), both...)
		b[0] = 'D' // magic
		p := stateIn(t, b)
		a := mustOpen(t, p, Options{Now: clockAt(vecClock), Window: 100})
		if v := mustNext(t, a); v != vecSeq2Ceiling+1 {
			t.Fatalf("first fence %d, want %d", v, uint64(vecSeq2Ceiling+1))
		}
		slots := decodeSlotsIndependently(t, readFile(t, p))
		if slots[0] != (diskRecord{true, 3, vecSeq2Ceiling + 100}) || slots[1] != (diskRecord{true, 2, vecSeq2Ceiling}) {
			t.Fatalf("slots = %+v; want seq 3 in slot 0, slot 1 untouched", slots)
		}
	})
}

// A refused file is left exactly as found, so an operator can inspect it.
func TestOpenRefusesCorruptFiles(t *testing.T) {
	both := readFile(t, "testdata/journal-seq2.bin")
	bothBad := append([]byte(nil), both...)
	bothBad[30] ^= 1
	bothBad[62] ^= 1
	seqExhausted := make([]byte, recordSize)
	encodeRecord(seqExhausted, record{seq: maxFence - 1, ceiling: 5})
	for _, tc := range []struct {
		name    string
		content []byte
		detail  string
	}{
		{"both slots corrupt", bothBad, "no record with valid magic and CRC-64"},
		{"size 17", bytes.Repeat([]byte{7}, 17), "size 17 bytes"},
		{"size 65", append(append([]byte(nil), both...), 0), "size 65 bytes"},
		{"size 4096", make([]byte, 4096), "size 4096 bytes"},
		{"zeros 32", make([]byte, 32), "no record"},
		{"seq exhausted", seqExhausted, "sequence"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := stateIn(t, tc.content)
			a, err := Open(p, Options{Logf: t.Logf})
			if err == nil {
				a.Close()
				t.Fatal("Open accepted a corrupt file")
			}
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.detail) {
				t.Fatalf("Open error %q: want ErrCorrupt mentioning %q and %q", err, p, tc.detail)
			}
			if got := readFile(t, p); !bytes.Equal(got, tc.content) {
				t.Fatalf("refused file was modified")
			}
			// The refusal released the lock.
			if _, err := Open(p, Options{Logf: t.Logf}); errors.Is(err, ErrLocked) {
				t.Fatalf("second attempt sees the lock still held: %v", err)
			}
		})
	}
	t.Run("directory", func(t *testing.T) {
		if _, err := Open(t.TempDir(), Options{Logf: t.Logf}); err == nil {
			t.Fatal("Open accepted a directory")
		}
	})
}

func TestLegacyUpgradedInPlace(t *testing.T) {
	legacy := readFile(t, "testdata/legacy.bin") // ceiling 1746403200001048576
	const w = 1000
	p := stateIn(t, legacy)
	a := mustOpen(t, p, Options{Now: clockAt(1_600_000_000_000_000_000), Window: w})
	slots := decodeSlotsIndependently(t, readFile(t, p))
	if slots[0] != (diskRecord{true, 1, vecSeq2Ceiling + w}) || slots[1] != (diskRecord{}) {
		t.Fatalf("after upgrade slots = %+v; want seq 1 ceiling %d in slot 0, slot 1 zero", slots, uint64(vecSeq2Ceiling+w))
	}
	first := mustNext(t, a)
	if first != vecSeq2Ceiling+1 {
		t.Fatalf("first fence %d, want legacy ceiling + 1 = %d", first, uint64(vecSeq2Ceiling+1))
	}
	// Issuing up to the first ceiling needs the persister's second record.
	var v uint64
	for v < vecSeq2Ceiling+w {
		v = mustNext(t, a)
	}
	slots = decodeSlotsIndependently(t, readFile(t, p))
	if slots[0] != (diskRecord{true, 1, vecSeq2Ceiling + w}) || !slots[1].Valid || slots[1].Seq != 2 || slots[1].Ceiling <= v {
		t.Fatalf("after second persist slots = %+v; want slot 1 seq 2 with ceiling > %d", slots, v)
	}

	// A legacy file behind the clock seeds from the clock.
	p2 := stateIn(t, legacy)
	b := mustOpen(t, p2, Options{Now: clockAt(vecSeq2Ceiling + 5_000_000), Window: w})
	if v := mustNext(t, b); v != vecSeq2Ceiling+5_000_001 {
		t.Fatalf("first fence %d, want clock + 1", v)
	}
}

func TestSecondOpenerRefused(t *testing.T) {
	p := stateIn(t, nil)
	a, err := Open(p, Options{Logf: t.Logf, Window: 64})
	if err != nil {
		t.Fatal(err)
	}
	// No fences yet, so our own persister stays idle and any change to
	// the file would come from the refused openers.
	before := readFile(t, p)

	_, err = Open(p, Options{Logf: t.Logf})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "another dflockd") {
		t.Fatalf("second Open in process: %v; want ErrLocked naming %s and another dflockd", err, p)
	}

	t.Run("other process", func(t *testing.T) {
		out, err := helperCommand(t, "open", p, nil).Output()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Fatalf("helper: %v, output %q; want exit status 3", err, out)
		}
		msg := string(out)
		if !strings.Contains(msg, ErrLocked.Error()) || !strings.Contains(msg, p) || !strings.Contains(msg, "another dflockd") {
			t.Fatalf("helper output %q: want the lock refusal naming %s", msg, p)
		}
	})
	if got := readFile(t, p); !bytes.Equal(got, before) {
		t.Fatal("refused openers modified the file")
	}

	var last uint64
	for range 500 {
		last = mustNext(t, a)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := mustOpen(t, p, Options{})
	if v := mustNext(t, b); v <= last {
		t.Fatalf("after reopen first fence %d ≤ last fence %d", v, last)
	}
}

// failingMsync lets the first ok calls through and then fails each call
// with err; block, if set, is received from before answering call ok+1.
type failingMsync struct {
	ok    int32
	err   error
	block chan error
	calls atomic.Int32
}

func (f *failingMsync) msync(b []byte) error {
	if f.calls.Add(1) <= f.ok {
		return nil
	}
	if f.block != nil {
		if err := <-f.block; err != nil {
			return err
		}
		return nil
	}
	return f.err
}

func TestPersistFailureStopsIssuanceForever(t *testing.T) {
	p := stateIn(t, nil)
	var logs logRecorder
	fm := &failingMsync{err: syscall.EIO}
	const w = 64
	a, err := Open(p, Options{Window: w, Logf: logs.Logf, msync: fm.msync})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ceiling := a.Stats().Ceiling
	var issued []uint64
	var firstErr error
	for range 10 * w {
		v, err := a.Next()
		if err != nil {
			firstErr = err
			break
		}
		issued = append(issued, v)
	}
	if firstErr == nil {
		t.Fatal("no error after the injected msync failure")
	}
	for _, v := range issued {
		if v >= ceiling {
			t.Fatalf("fence %d issued at or above the only durable ceiling %d", v, ceiling)
		}
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				v, err := a.Next()
				if err == nil {
					t.Errorf("Next after persist failure returned %d", v)
					return
				}
				if !errors.Is(err, ErrPersist) || !errors.Is(err, syscall.EIO) {
					t.Errorf("Next error %v: want ErrPersist wrapping EIO", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if !errors.Is(firstErr, ErrPersist) {
		t.Fatalf("first error %v, want ErrPersist", firstErr)
	}
	if st := a.Stats(); !st.Failed || st.Ceiling != ceiling || st.Persists != 1 {
		t.Fatalf("Stats = %+v; want Failed, ceiling unchanged at %d, 1 persist", st, ceiling)
	}
	if n := fm.calls.Load(); n != 1 {
		t.Fatalf("msync called %d times, want 1 (no retry after a failure)", n)
	}
	lines := logs.Lines()
	if len(lines) != 1 || !strings.Contains(lines[0], "persisting the fence ceiling failed") || !strings.Contains(lines[0], p) {
		t.Fatalf("log lines %q; want exactly one naming the failure and %s", lines, p)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// The next incarnation still starts above everything issued.
	b := mustOpen(t, p, Options{Window: w})
	if v := mustNext(t, b); v <= issued[len(issued)-1] {
		t.Fatalf("after restart %d ≤ last issued %d", v, issued[len(issued)-1])
	}
}

// A stalled Next waits for the in-flight persist and gets its fence, or
// the persist's error.
func TestStallWaitsForPersist(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail=%v", fail), func(t *testing.T) {
			const w = 16
			fm := &failingMsync{block: make(chan error)}
			a := mustOpen(t, stateIn(t, nil), Options{Window: w, msync: fm.msync, Logf: t.Logf})
			seed := a.Stats().Seed
			for i := uint64(1); i < w; i++ {
				if v := mustNext(t, a); v != seed+i {
					t.Fatalf("fence %d, want %d", v, seed+i)
				}
			}
			type result struct {
				v   uint64
				err error
			}
			done := make(chan result, 1)
			go func() {
				v, err := a.Next() // seed+w: at the ceiling, must wait
				done <- result{v, err}
			}()
			eventually(t, "the stall", func() bool { return a.Stats().Stalls == 1 })
			eventually(t, "the persister's msync", func() bool { return fm.calls.Load() == 1 })
			select {
			case r := <-done:
				t.Fatalf("stalled Next returned %+v before the persist finished", r)
			default:
			}
			if fail {
				fm.block <- syscall.EIO
			} else {
				fm.block <- nil
			}
			r := <-done
			switch {
			case fail && (r.err == nil || !errors.Is(r.err, ErrPersist)):
				t.Fatalf("stalled Next after failed persist = %+v, want ErrPersist", r)
			case !fail && (r.err != nil || r.v != seed+w):
				t.Fatalf("stalled Next = %+v, want %d", r, seed+w)
			case !fail && a.Stats().Ceiling <= seed+w:
				t.Fatalf("ceiling %d not raised past %d", a.Stats().Ceiling, seed+w)
			}
		})
	}
}

// Truncating the file behind the allocator's back makes the next store to
// the mapping fault (SIGBUS); that must become a persist error, not a crash.
func TestMappingFaultIsAPersistError(t *testing.T) {
	p := stateIn(t, nil)
	var logs logRecorder
	a, err := Open(p, Options{Window: 64, Logf: logs.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := os.Truncate(p, 0); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for range 1000 {
		if _, err := a.Next(); err != nil {
			lastErr = err
			break
		}
	}
	if !errors.Is(lastErr, ErrPersist) || !strings.Contains(lastErr.Error(), "fault") {
		t.Fatalf("Next after truncation: %v; want ErrPersist describing the fault", lastErr)
	}
	if len(logs.Lines()) != 1 {
		t.Fatalf("log lines %q, want one", logs.Lines())
	}
}

// Persists are bounded by the window: each one buys at least W fences and
// none is written before the counter is within W/2 of the ceiling.
func TestPersistsPerWindow(t *testing.T) {
	const w, n = 1024, 200_000
	a := mustOpen(t, stateIn(t, nil), Options{Window: w})
	for range n {
		mustNext(t, a)
	}
	st := a.Stats()
	extra := st.Persists - 1 // Open's own reservation
	if hi := uint64(n/w + 2); extra > hi || extra < n/(2*w) {
		t.Fatalf("%d persists for %d fences with W=%d; want between %d and %d", extra, n, w, n/(2*w), hi)
	}
	t.Logf("W=%d: %d persists, %d stalls for %d fences; last persist %v, max %v", w, extra, st.Stalls, n, st.LastPersist, st.MaxPersist)
}

func TestDurableExhaustion(t *testing.T) {
	be := func(v uint64) []byte {
		return []byte{byte(v >> 56), byte(v >> 48), byte(v >> 40), byte(v >> 32), byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
	}
	a := mustOpen(t, stateIn(t, be(maxFence-10)), Options{Window: 4})
	for want := maxFence - 9; want < maxFence; want++ {
		if v := mustNext(t, a); v != want {
			t.Fatalf("fence %d, want %d", v, want)
		}
	}
	for range 5 {
		if v, err := a.Next(); !errors.Is(err, ErrExhausted) {
			t.Fatalf("Next at 2^64-1 = %d, %v; want ErrExhausted", v, err)
		}
	}
	if c := a.Stats().Ceiling; c != maxFence {
		t.Fatalf("ceiling %d, want 2^64-1", c)
	}
	if _, err := Open(stateIn(t, be(maxFence-1)), Options{Logf: t.Logf}); !errors.Is(err, ErrExhausted) {
		t.Fatalf("Open with ceiling 2^64-2: %v, want ErrExhausted", err)
	}
}

func TestCloseDurable(t *testing.T) {
	p := stateIn(t, nil)
	a, err := Open(p, Options{Window: 32, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		mustNext(t, a)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	after := readFile(t, p)
	for range 3 {
		if _, err := a.Next(); !errors.Is(err, ErrClosed) {
			t.Fatalf("Next after Close: %v, want ErrClosed", err)
		}
	}
	if !bytes.Equal(after, readFile(t, p)) {
		t.Fatal("file changed after Close")
	}
	if !a.Stats().Closed {
		t.Fatal("Stats.Closed false after Close")
	}
}
