package engine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// TestDeterminism records a random workload over every primitive — locks,
// semaphores, read-write locks, two-phase waits, counters, KV with TTLs,
// lists with blocking pops, pub/sub with queue groups, watches, barriers,
// elections, foreign (godistlock) acquires, session opens and closes,
// GC, and time advancing so that leases, TTLs and timeouts fire — as a
// command log, while applying it to an engine. The log is then applied to
// two fresh engines, and to one with another shard count: every result,
// every effect in order, the final stats document and the state digest
// must be the same.
//
// The replays follow the recording command by command instead of
// replaying a kept log afterwards, so that no history is held: the full
// size (4 × 120,000 rendered results and effects, and the log) took
// 2.9 GB of memory, more than a CI step may (issue #34). Each engine is
// still fed exactly the recorded command log, from its start.
func TestDeterminism(t *testing.T) {
	n := 120_000
	if testing.Short() || raceEnabled {
		n = 15_000 // CI also runs it at full size without -race (.ci/run)
	}
	for _, p := range []vocab.Profile{vocab.ProfileV2, vocab.ProfileRF} {
		t.Run(p.String(), func(t *testing.T) {
			cfg := Config{Shards: 16, Profile: p, TokenKey: testKey, FenceFloor: 1 << 40,
				DefaultLease: 3 * time.Second, MaxWaiters: 8, MaxSubscriptions: 6, GCMaxIdle: 5 * time.Second}
			// into: through ApplyTo, into one Result that starts used
			// and is never cleared: ApplyTo must overwrite all of it.
			other := cfg
			other.Shards = 128
			replays := []*detReplay{newDetReplay(cfg, false), newDetReplay(cfg, true), newDetReplay(other, false)}
			g := newDetGen(cfg, uint64(n)+uint64(p))
			g.follow = func(i int, c *Command, want string) {
				b1, b2, b3 := replays[0].apply(c), replays[1].apply(c), replays[2].apply(c)
				if b1 != want || b2 != want {
					t.Fatalf("command %d (%s): replays differ:\n recorded %s\n first    %s\n second   %s", i, g.describeCmd(c), want, b1, b2)
				}
				if b3 != want {
					t.Fatalf("command %d (%s): with 128 shards:\n recorded %s\n got      %s", i, g.describeCmd(c), want, b3)
				}
			}
			for g.n < n {
				g.step()
			}
			t.Logf("%d commands: %s", g.n, g.kinds())
			s1, d1 := replays[0].end(g.at, p)
			s2, d2 := replays[1].end(g.at, p)
			s3, d3 := replays[2].end(g.at, p)
			stats := string(parse.AppendStats(nil, g.eng.Stats(g.at, 0), p))
			if s1 != stats || s2 != stats || s3 != stats {
				t.Fatalf("stats differ:\n recorded %s\n replays  %s\n          %s\n 128      %s", stats, s1, s2, s3)
			}
			if d := g.eng.Digest(); d1 != d || d2 != d || d3 != d {
				t.Fatalf("digests differ: recorded %x, replays %x %x, 128 shards %x", d, d1, d2, d3)
			}
			t.Logf("stats: %d bytes, digest %x", len(stats), g.eng.Digest())
		})
	}
}

// detReplay is one engine fed the recorded commands as they are made.
type detReplay struct {
	e    *Engine
	fx   Effects
	into bool
	r    Result
}

func newDetReplay(cfg Config, into bool) *detReplay {
	e := New(cfg)
	return &detReplay{e: e, into: into, r: Result{Status: vocab.StatusErrorAuth, Kind: KindList, Token: e.Token(1), Lease: 1, Int: 2,
		Value: "used", Items: []string{"used"}, Push: Push{A: "a", B: "b"}, Blocked: true, Tag: 3, Session: 4}}
}

// apply applies a copy of the recorded command c and renders what came out.
func (d *detReplay) apply(c *Command) string {
	cc := *c
	if d.into {
		d.e.ApplyTo(&cc, &d.fx, &d.r)
	} else {
		d.r = d.e.Apply(&cc, &d.fx)
	}
	out := record(d.r, &d.fx)
	d.fx.Reset()
	return out
}

// end returns the replay's final stats document and state digest.
func (d *detReplay) end(at timerwheel.Instant, p vocab.Profile) (string, [32]byte) {
	return string(parse.AppendStats(nil, d.e.Stats(at, 0), p)), d.e.Digest()
}

// record renders a command's result and its effects, in order.
func record(r Result, fx *Effects) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%+v", r)
	for _, f := range fx.List {
		fmt.Fprintf(&b, " | %#x %+v %v %d", uint64(f.To), f.Result, f.Group, f.Start)
	}
	return b.String()
}

// detGen generates the workload against a recording engine, tracking what
// a well-behaved client set would know: live sessions, which are parked,
// and tokens seen in grants.
type detGen struct {
	rng *rand.Rand
	eng *Engine
	fx  Effects
	at  timerwheel.Instant
	n   int // commands made
	// follow, when set, is handed each command (before it was applied)
	// and its rendered result, in order, and log and out stay empty;
	// otherwise they keep the whole history.
	follow func(i int, c *Command, out string)
	log    []Command
	out    []string
	counts map[string]int // commands made, by name (kinds)
	live   []SessionID
	parked map[SessionID]bool
	tokens map[string][]string // by key: tokens granted on it, some stale
	tag    uint32
}

func newDetGen(cfg Config, seed uint64) *detGen {
	return &detGen{
		rng:    rand.New(rand.NewPCG(seed, 42)),
		eng:    New(cfg),
		parked: map[SessionID]bool{},
		tokens: map[string][]string{},
		counts: map[string]int{},
	}
}

var (
	detLockKeys = []string{"a", "b", "c"}
	detRWKeys   = []string{"rw1", "rw2"}
	detSemKeys  = []string{"s1", "s2"}
	detCtrKeys  = []string{"n1", "n2"}
	detKVKeys   = []string{"k1", "k2", "k3"}
	detLists    = []string{"q1", "q2"}
	detChannels = []string{"ch.a", "ch.b", "x.y.z"}
	detPatterns = []string{"ch.a", "ch.*", "ch.>", ">", "x.*.z"}
	detBarriers = []string{"bar1", "bar2"}
	detElects   = []string{"e1", "e2"}
)

func (g *detGen) pick(xs []string) string { return xs[g.rng.IntN(len(xs))] }

// run applies c at the current time, records it and learns from it.
func (g *detGen) run(c Command) Result {
	c.At = g.at
	logged := c
	g.fx.Reset()
	r := g.eng.Apply(&c, &g.fx)
	out := record(r, &g.fx)
	g.counts[g.name(&logged)]++
	if g.follow != nil {
		g.follow(g.n, &logged, out)
	} else {
		g.log = append(g.log, logged)
		g.out = append(g.out, out)
	}
	g.n++
	g.learn(c.Req.Key, r)
	if r.Blocked {
		g.parked[c.Session] = true
	}
	for _, f := range g.fx.List {
		if f.Result.Kind != KindPush {
			g.parked[f.To] = false
			g.learn(nil, f.Result)
		}
	}
	if c.Kind == KindOpen {
		g.live = append(g.live, r.Session)
	}
	return r
}

// learn keeps the token of a grant, by key when known.
func (g *detGen) learn(key []byte, r Result) {
	if r.Kind != KindGrant {
		return
	}
	tok := string(r.Token.Append(nil))
	k := string(key)
	g.tokens[k] = append(g.tokens[k], tok)
	g.tokens[""] = append(g.tokens[""], tok) // grants delivered later: key unknown here
	if n := len(g.tokens[k]); n > 8 {
		g.tokens[k] = g.tokens[k][n-8:]
	}
	if n := len(g.tokens[""]); n > 32 {
		g.tokens[""] = g.tokens[""][n-32:]
	}
}

// token picks a token to release or renew key with: one granted on it,
// one granted anywhere, or garbage.
func (g *detGen) token(key string) []byte {
	switch x := g.rng.IntN(10); {
	case x < 6 && len(g.tokens[key]) > 0:
		return []byte(g.pick(g.tokens[key]))
	case x < 9 && len(g.tokens[""]) > 0:
		return []byte(g.pick(g.tokens[""]))
	}
	return []byte("00000000000000010000000000000001")
}

func (g *detGen) req(s SessionID, op vocab.Op, key string, fill func(*vocab.Request)) Result {
	r := vocab.Request{Op: op, Key: []byte(key)}
	if fill != nil {
		fill(&r)
	}
	return g.run(Command{Kind: KindRequest, Session: s, Req: r})
}

func (g *detGen) step() {
	// Time moves: a little with every command, sometimes a lot, always
	// to an instant within a millisecond (deadlines round up from it).
	g.at += timerwheel.Instant(g.rng.IntN(2_000_000))
	if len(g.live) < 4 || g.rng.IntN(200) == 0 {
		g.run(Command{Kind: KindOpen})
		return
	}
	switch x := g.rng.IntN(1000); {
	case x < 40:
		g.at += timerwheel.Instant(g.rng.Int64N(int64(2500 * time.Millisecond)))
		g.run(Command{Kind: KindAdvance})
		return
	case x < 43:
		g.run(Command{Kind: KindGC})
		return
	case x < 46:
		// A parked request withdrawn, as an HTTP client that went away.
		var parked []SessionID
		for _, s := range g.live {
			if g.parked[s] {
				parked = append(parked, s)
			}
		}
		if len(parked) > 0 {
			s := g.pick64(parked)
			if r := g.run(Command{Kind: KindCancel, Session: s}); r.Int == 1 {
				delete(g.parked, s)
			}
		}
		return
	case x < 50 && len(g.live) > 8:
		i := g.rng.IntN(len(g.live))
		s := g.live[i]
		g.live = slices.Delete(g.live, i, i+1)
		delete(g.parked, s)
		// A third of the closes keep the holds until their leases end,
		// as a cluster's failover closes the earlier epoch's sessions.
		g.run(Command{Kind: KindClose, Session: s, Keep: g.rng.IntN(3) == 0})
		return
	}
	s := g.pick64(g.live)
	if g.parked[s] {
		return // one request at a time: this one waits for its answer
	}
	ttl := func() int64 { return int64(1 + g.rng.IntN(4)) }
	timeout := func() int64 { return int64(g.rng.IntN(3)) }
	switch x := g.rng.IntN(100); {
	case x < 14:
		k := g.pick(detLockKeys)
		g.req(s, vocab.OpLock, k, func(r *vocab.Request) { r.Timeout, r.Lease = timeout(), ttl() })
	case x < 24:
		k := g.pick(detLockKeys)
		g.req(s, vocab.OpRelease, k, func(r *vocab.Request) { r.Token = g.token(k) })
	case x < 28:
		k := g.pick(detLockKeys)
		g.req(s, vocab.OpRenew, k, func(r *vocab.Request) { r.Token, r.Lease = g.token(k), ttl() })
	case x < 32:
		g.req(s, vocab.OpEnqueue, g.pick(detLockKeys), func(r *vocab.Request) { r.Lease = ttl() })
	case x < 36:
		g.req(s, vocab.OpWait, g.pick(detLockKeys), func(r *vocab.Request) { r.Timeout = timeout() })
	case x < 41:
		k := g.pick(detSemKeys)
		g.req(s, vocab.OpSemLock, k, func(r *vocab.Request) { r.Timeout, r.Limit, r.Lease = timeout(), 2, ttl() })
	case x < 45:
		k := g.pick(detSemKeys)
		g.req(s, vocab.OpSemRelease, k, func(r *vocab.Request) { r.Token = g.token(k) })
	case x < 49:
		k := g.pick(detRWKeys)
		op := []vocab.Op{vocab.OpReadLock, vocab.OpWriteLock}[g.rng.IntN(2)]
		g.req(s, op, k, func(r *vocab.Request) { r.Timeout, r.Lease = timeout(), ttl() })
	case x < 52:
		k := g.pick(detRWKeys)
		g.req(s, vocab.OpReadRelease, k, func(r *vocab.Request) { r.Token = g.token(k) })
	case x < 56:
		op := []vocab.Op{vocab.OpIncr, vocab.OpDecr, vocab.OpGet, vocab.OpCSet}[g.rng.IntN(4)]
		g.req(s, op, g.pick(detCtrKeys), func(r *vocab.Request) { r.N = int64(g.rng.IntN(7) - 3) })
	case x < 62:
		op := []vocab.Op{vocab.OpKSet, vocab.OpKGet, vocab.OpKDel, vocab.OpKCAS}[g.rng.IntN(4)]
		g.req(s, op, g.pick(detKVKeys), func(r *vocab.Request) {
			r.Value = []byte("v" + strconv.Itoa(g.rng.IntN(3)))
			r.Old = []byte([]string{"", "v0", "v1"}[g.rng.IntN(3)])
			if g.rng.IntN(2) == 0 {
				r.TTL = ttl()
			}
		})
	case x < 70:
		op := []vocab.Op{vocab.OpLPush, vocab.OpRPush, vocab.OpLPop, vocab.OpRPop, vocab.OpLLen, vocab.OpLRange,
			vocab.OpBLPop, vocab.OpBRPop}[g.rng.IntN(8)]
		g.req(s, op, g.pick(detLists), func(r *vocab.Request) {
			r.Value = []byte("item" + strconv.Itoa(g.rng.IntN(100)))
			r.Timeout, r.N, r.M = timeout(), int64(g.rng.IntN(3)), int64(g.rng.IntN(3)-1)
		})
	case x < 76:
		op := []vocab.Op{vocab.OpListen, vocab.OpListen, vocab.OpUnlisten}[g.rng.IntN(3)]
		g.req(s, op, g.pick(detPatterns), func(r *vocab.Request) {
			r.Value = []byte([]string{"", "", "grp"}[g.rng.IntN(3)])
		})
	case x < 82:
		g.req(s, vocab.OpSignal, g.pick(detChannels), func(r *vocab.Request) { r.Value = []byte("payload") })
	case x < 85:
		op := []vocab.Op{vocab.OpWatch, vocab.OpWatch, vocab.OpUnwatch}[g.rng.IntN(3)]
		pats := append(slices.Clone(detLockKeys), "*", ">", "k1", "q1", "n1")
		g.req(s, op, g.pick(pats), nil)
	case x < 88:
		g.req(s, vocab.OpBWait, g.pick(detBarriers), func(r *vocab.Request) { r.N, r.Timeout = 3, timeout() })
	case x < 92:
		g.req(s, vocab.OpElect, g.pick(detElects), func(r *vocab.Request) { r.Timeout, r.Lease = timeout(), ttl() })
	case x < 94:
		k := g.pick(detElects)
		g.req(s, vocab.OpResign, k, func(r *vocab.Request) { r.Token = g.token(k) })
	case x < 96:
		op := []vocab.Op{vocab.OpObserve, vocab.OpObserve, vocab.OpUnobserve}[g.rng.IntN(3)]
		g.req(s, op, g.pick(detElects), nil)
	default:
		// Foreign (godistlock) operations on the lock keys.
		k := []byte(g.pick(detLockKeys))
		switch g.rng.IntN(4) {
		case 0:
			g.tag++
			g.run(Command{Kind: KindTaggedAcquire, Session: s, Req: vocab.Request{Key: k}, Tag: g.tag, Wait: g.rng.IntN(2) == 0, LeaseMs: 1500})
		case 1:
			g.run(Command{Kind: KindOwnRelease, Session: s, Req: vocab.Request{Key: k}})
		case 2:
			g.run(Command{Kind: KindFenceRenew, Session: s, Req: vocab.Request{Key: k}, Fence: g.eng.LastFence(), LeaseMs: 2000})
		default:
			g.run(Command{Kind: KindHolder, Req: vocab.Request{Key: k}})
		}
	}
}

func (g *detGen) pick64(xs []SessionID) SessionID { return xs[g.rng.IntN(len(xs))] }

// kinds summarises the log: how many commands of each op.
func (g *detGen) kinds() string {
	m := g.counts
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b bytes.Buffer
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %d, ", k, m[k])
	}
	return b.String()
}

func (g *detGen) name(c *Command) string {
	switch c.Kind {
	case KindRequest:
		return c.Req.Op.String()
	case KindOpen:
		return "open"
	case KindClose:
		if c.Keep {
			return "close-keep"
		}
		return "close"
	case KindGC:
		return "gc"
	case KindAdvance:
		return "advance"
	case KindTaggedAcquire:
		return "tagged-acquire"
	case KindOwnRelease:
		return "own-release"
	case KindFenceRenew:
		return "fence-renew"
	case KindHolder:
		return "holder"
	case KindCancel:
		return "cancel"
	}
	return "?"
}

func (g *detGen) describe(i int) string { return g.describeCmd(&g.log[i]) }

func (g *detGen) describeCmd(c *Command) string {
	return fmt.Sprintf("%s %#x %q at %d", g.name(c), uint64(c.Session), c.Req.Key, c.At)
}
