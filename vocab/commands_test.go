package vocab

import "testing"

func TestOp(t *testing.T) {
	names := map[Op]string{
		OpUnknown: "?", OpLock: "l", OpRelease: "r", OpRenew: "n", OpEnqueue: "e", OpWait: "w",
		OpSemLock: "sl", OpSemRelease: "sr", OpSemRenew: "sn", OpSemEnqueue: "se", OpSemWait: "sw",
		OpAuth: "auth", OpPing: "ping", OpStats: "stats", OpBarrier: "barrier", OpStableRef: "stable-ref",
		OpReadLock: "rl", OpWriteLock: "wl", OpReadRelease: "rr", OpWriteRelease: "wr",
		OpReadRenew: "rn", OpWriteRenew: "wn", OpReadEnqueue: "re", OpWriteEnqueue: "we",
		OpReadWait: "rw", OpWriteWait: "ww",
		OpIncr: "incr", OpDecr: "decr", OpGet: "get", OpCSet: "cset",
		OpKSet: "kset", OpKGet: "kget", OpKDel: "kdel", OpKCAS: "kcas",
		OpLPush: "lpush", OpRPush: "rpush", OpLPop: "lpop", OpRPop: "rpop", OpLLen: "llen",
		OpLRange: "lrange", OpBLPop: "blpop", OpBRPop: "brpop",
		OpListen: "listen", OpUnlisten: "unlisten", OpSignal: "signal", OpWatch: "watch", OpUnwatch: "unwatch",
		OpBWait: "bwait", OpElect: "elect", OpResign: "resign", OpObserve: "observe", OpUnobserve: "unobserve",
	}
	if len(names) != NumOps {
		t.Fatalf("test knows %d ops, package %d", len(names), NumOps)
	}
	for op, name := range names {
		if op.String() != name {
			t.Errorf("Op(%d).String() = %q, want %q", op, op.String(), name)
		}
		if op != OpUnknown && Named([]byte(name)) != op {
			t.Errorf("Named(%q) = %v, want %v", name, Named([]byte(name)), op)
		}
		sem := op == OpSemLock || op == OpSemRelease || op == OpSemRenew || op == OpSemEnqueue || op == OpSemWait
		if op.Semaphore() != sem {
			t.Errorf("%v.Semaphore() = %v", op, op.Semaphore())
		}
	}
	if Named([]byte("?")) != OpUnknown {
		t.Error(`"?" must not name a command`)
	}
}

// TestKnows pins which profiles know which commands (spec §B.13): v1.10
// knows the lock and semaphore commands, auth and stats; the redis-feats
// line everything but ping; v2 everything.
func TestKnows(t *testing.T) {
	v1 := map[Op]bool{OpLock: true, OpRelease: true, OpRenew: true, OpEnqueue: true, OpWait: true,
		OpSemLock: true, OpSemRelease: true, OpSemRenew: true, OpSemEnqueue: true, OpSemWait: true,
		OpAuth: true, OpStats: true}
	for op := OpUnknown + 1; op < numOps; op++ {
		if !ProfileV2.Knows(op) {
			t.Errorf("v2 does not know %v", op)
		}
		if got, want := ProfileRF.Knows(op), op != OpPing; got != want {
			t.Errorf("rf knows %v: %v, want %v", op, got, want)
		}
		if got, want := ProfileV1.Knows(op), v1[op]; got != want {
			t.Errorf("v1 knows %v: %v, want %v", op, got, want)
		}
	}
	for _, p := range []Profile{ProfileV2, ProfileV1, ProfileRF} {
		if p.Knows(OpUnknown) {
			t.Errorf("%v knows the unknown command", p)
		}
	}
}

// TestNamedDoesNotAllocate: the lookup runs for every request.
func TestNamedDoesNotAllocate(t *testing.T) {
	cmd := []byte("unobserve")
	if n := testing.AllocsPerRun(100, func() { Named(cmd) }); n != 0 {
		t.Errorf("Named allocates %v times", n)
	}
}
