package engine

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/vocab"
)

// A snapshot taken anywhere in a random workload over every primitive,
// restored into a fresh engine (with the same or another shard count),
// goes on exactly as the original: the same result and effects for every
// later command, the same final digest. Restoring and snapshotting again
// gives the same bytes.
func TestSnapshotRestoreContinuesIdentically(t *testing.T) {
	n := 30_000
	if testing.Short() || raceEnabled {
		n = 6_000
	}
	for _, p := range []vocab.Profile{vocab.ProfileV2, vocab.ProfileRF, vocab.ProfileV1} {
		t.Run(p.String(), func(t *testing.T) {
			cfg := Config{Shards: 16, Profile: p, TokenKey: testKey, FenceFloor: 1 << 40,
				DefaultLease: 3 * time.Second, MaxWaiters: 8, MaxSubscriptions: 6, GCMaxIdle: 5 * time.Second}
			g := newDetGen(cfg, uint64(n)*7+uint64(p))
			for len(g.log) < n {
				g.step()
			}
			cuts := []int{1, n / 5, n / 2, n - n/7}
			// And right after the last close that kept its holds (a
			// failover's), while they are still held: the snapshot names
			// the closed session (format 3).
			for i := len(g.log) - 1; i > 0; i-- {
				if c := g.log[i-1]; c.Kind == KindClose && c.Keep {
					cuts = append(cuts, i)
					break
				}
			}
			for _, cut := range cuts {
				src := New(cfg)
				var fx Effects
				for i := range cut {
					c := g.log[i]
					src.Apply(&c, &fx)
					fx.Reset()
				}
				var snap bytes.Buffer
				if err := src.Snapshot(&snap); err != nil {
					t.Fatal(err)
				}
				var again bytes.Buffer
				if err := src.Snapshot(&again); err != nil || !bytes.Equal(snap.Bytes(), again.Bytes()) {
					t.Fatalf("cut %d: two snapshots of one state differ (%v)", cut, err)
				}
				for _, shards := range []int{16, 64} {
					rcfg := cfg
					rcfg.Shards = shards
					dst, err := Restore(rcfg, bytes.NewReader(snap.Bytes()))
					if err != nil {
						t.Fatalf("cut %d: restore: %v", cut, err)
					}
					if dst.Digest() != src.Digest() {
						t.Fatalf("cut %d, %d shards: restored digest differs", cut, shards)
					}
					var round bytes.Buffer
					if err := dst.Snapshot(&round); err != nil || !bytes.Equal(round.Bytes(), snap.Bytes()) {
						t.Fatalf("cut %d, %d shards: snapshot of the restored engine differs (%v)", cut, shards, err)
					}
					for i := cut; i < len(g.log); i++ {
						c := g.log[i]
						got := record(dst.Apply(&c, &fx), &fx)
						fx.Reset()
						if got != g.out[i] {
							t.Fatalf("cut %d, %d shards, command %d (%s):\n recorded %s\n restored %s", cut, shards, i, g.describe(i), g.out[i], got)
						}
					}
					if dst.Digest() != g.eng.Digest() {
						t.Fatalf("cut %d, %d shards: final digest differs", cut, shards)
					}
				}
				t.Logf("cut at %d of %d commands: %d-byte snapshot, format %d", cut, len(g.log), snap.Len(), snap.Bytes()[len(snapMagic)-1])
			}
		})
	}
}

// Damaged snapshots are refused with ErrBadSnapshot, never a crash.
func TestRestoreRefusesDamage(t *testing.T) {
	cfg := Config{Shards: 4, TokenKey: testKey}
	g := newDetGen(cfg, 99)
	for len(g.log) < 3000 {
		g.step()
	}
	var snap bytes.Buffer
	if err := g.eng.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	b := snap.Bytes()
	for _, damage := range []func([]byte) []byte{
		func(b []byte) []byte { return b[:len(b)/2] },                                                        // truncated
		func(b []byte) []byte { return b[:len(b)-1] },                                                        // no full checksum
		func(b []byte) []byte { b[0] ^= 1; return b },                                                        // magic
		func(b []byte) []byte { b[len(b)/3] ^= 0x40; return b },                                              // a flipped bit
		func(b []byte) []byte { return append(b[:9], 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f) }, // a huge count
	} {
		bad := damage(bytes.Clone(b))
		if _, err := Restore(cfg, bytes.NewReader(bad)); !errors.Is(err, ErrBadSnapshot) {
			t.Errorf("damaged snapshot (%d bytes): err %v, want ErrBadSnapshot", len(bad), err)
		}
	}
	if _, err := Restore(cfg, bytes.NewReader(b)); err != nil {
		t.Fatalf("the undamaged snapshot: %v", err)
	}
}
