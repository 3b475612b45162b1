package loop

import (
	"testing"
	"time"
)

func TestBlockingPopAcrossLoops(t *testing.T) {
	k := key("q")
	// The shared server runs two loops with round-robin placement, so
	// consecutive connections sit on different loops.
	popper, pusher := dial(t, plain), dial(t, plain)
	popper.send("blpop", k, "5")
	popper.silent(100 * time.Millisecond)
	pusher.do("rpush", k, "hello world", "ok 0") // handed over, nothing stored
	popper.expect("ok hello world")
	pusher.do("llen", k, "", "ok 0")

	start := time.Now()
	popper.do("brpop", k, "1", "nil")
	if el := time.Since(start); el < 900*time.Millisecond {
		t.Fatalf("brpop timed out after %v, before its 1 s timeout", el)
	}
	pusher.do("lpush", k, "a", "ok 1")
	pusher.do("rpush", k, "b", "ok 2")
	popper.do("lrange", k, "0 -1", `ok ["a","b"]`)
	popper.do("brpop", k, "5", "ok b")
	popper.do("lpop", k, "", "ok a")
	popper.do("lpop", k, "", "nil")
}
