package loop

import (
	"testing"
	"time"
)

// popWaiters is the number of blocked pops on list k.
func (p profile) popWaiters(t *testing.T, k string) int {
	t.Helper()
	return int(stat(t, p.ts, "lists", k, "pop_waiters"))
}

// blockingPopScenario: a blpop is satisfied by a push from a connection on
// the other event loop, the push is answered ok 0 (handed over, nothing
// stored: spec §B.7, §I.27), and pops time out with nil.
func blockingPopScenario(t *testing.T, p profile) {
	k := key("q")
	// The test servers run two loops with round-robin placement, so
	// consecutive connections sit on different loops.
	popper, pusher := p.dial(t), p.dial(t)
	popper.send("blpop", k, "5")
	waitFor(t, func() bool { return p.popWaiters(t, k) == 1 })
	pusher.do("rpush", k, "hello world", "ok 0")
	popper.expect("ok hello world")
	pusher.do("llen", k, "", "ok 0")

	for _, pop := range []string{"blpop", "brpop"} {
		start := time.Now()
		popper.do(pop, k, "1", "nil")
		if el := time.Since(start); el < 900*time.Millisecond {
			t.Fatalf("%s timed out after %v, before its 1 s timeout", pop, el)
		}
	}
	popper.do("blpop", k, "0", "nil") // timeout 0: no wait
	pusher.do("lpush", k, "a", "ok 1")
	pusher.do("rpush", k, "b", "ok 2")
	popper.do("lrange", k, "0 -1", `ok ["a","b"]`)
	popper.do("brpop", k, "5", "ok b") // items there: no wait
	popper.do("lpop", k, "", "ok a")
	popper.do("lpop", k, "", "nil")
	popper.do("rpop", k, "", "nil")
}

func TestBlockingPopAcrossLoops(t *testing.T)   { blockingPopScenario(t, v2Profile()) }
func TestBlockingPopAcrossLoopsRF(t *testing.T) { blockingPopScenario(t, rfProfile()) }

// popOrderScenario: a push goes to the oldest blocked popper whichever end
// either side names (§B.7); only once no one waits is the value stored.
func popOrderScenario(t *testing.T, p profile) {
	k := key("q")
	first, second, pusher := p.dial(t), p.dial(t), p.dial(t)
	first.send("brpop", k, "5")
	waitFor(t, func() bool { return p.popWaiters(t, k) == 1 })
	second.send("blpop", k, "5")
	waitFor(t, func() bool { return p.popWaiters(t, k) == 2 })
	pusher.do("lpush", k, "one", "ok 0")
	first.expect("ok one")
	second.silent(50 * time.Millisecond)
	pusher.do("rpush", k, "two", "ok 0")
	second.expect("ok two")
	pusher.do("rpush", k, "three", "ok 1")
	pusher.do("lpush", k, "zero", "ok 2")
	pusher.do("lrange", k, "-1 5", `ok ["three"]`)
	pusher.do("lrange", k, "1 0", `ok []`)
	pusher.do("llen", k, "", "ok 2")
}

func TestPushGoesToOldestPopper(t *testing.T)   { popOrderScenario(t, v2Profile()) }
func TestPushGoesToOldestPopperRF(t *testing.T) { popOrderScenario(t, rfProfile()) }
