package loop

import (
	"testing"
	"time"
)

// watchScenario: a watcher gets "watch <event> <key>" for KV, lock,
// counter and list events on keys its pattern matches, once however many
// of its patterns match, its own included; nothing after unwatch, and
// reads raise nothing (spec §B.10).
func watchScenario(t *testing.T, p profile) {
	k := key("wk")
	watcher, actor, popper := p.dial(t), p.dial(t), p.dial(t)
	watcher.do("watch", k+".*", "", "ok")
	watcher.do("watch", k+".>", "", "ok") // overlaps .*: still one push each
	actor.do("kset", k+".v", "x", "ok")
	watcher.expect("watch kset " + k + ".v")
	actor.do("kget", k+".v", "", "ok x") // reads raise nothing
	actor.do("kcas", k+".v", "x\ty\t0", "ok")
	watcher.expect("watch kcas " + k + ".v")
	actor.do("kdel", k+".v", "", "ok")
	watcher.expect("watch kdel " + k + ".v")
	tok := actor.do("l", k+".l", "0 10", p.grant(10))[1]
	watcher.expect("watch acquire " + k + ".l")
	actor.do("r", k+".l", tok, "ok")
	watcher.expect("watch release " + k + ".l")
	actor.do("incr", k+".c", "2", "ok 2")
	watcher.expect("watch incr " + k + ".c")
	// A push handed to a blocked popper raises both sides' events.
	popper.send("blpop", k+".q", "5")
	waitFor(t, func() bool { return p.popWaiters(t, k+".q") == 1 })
	actor.do("rpush", k+".q", "job", "ok 0")
	popper.expect("ok job")
	watcher.expect("watch rpush " + k + ".q")
	watcher.expect("watch blpop " + k + ".q")
	// The watcher's own writes, and deeper keys for > only.
	watcher.do("kset", k+".a.b", "z", "ok")
	watcher.expect("watch kset " + k + ".a.b")
	watcher.roundTrip()
	watcher.silent(50 * time.Millisecond)

	watcher.do("unwatch", k+".*", "", "ok")
	watcher.do("unwatch", k+".>", "", "ok")
	actor.do("kset", k+".v", "y", "ok")
	watcher.roundTrip() // no push came before this reply
	watcher.silent(50 * time.Millisecond)
	watcher.do("watch", k+".a>", "", "error")
}

func TestWatchOverTheWire(t *testing.T)   { watchScenario(t, v2Profile()) }
func TestWatchOverTheWireRF(t *testing.T) { watchScenario(t, rfProfile()) }

// leaseEndWatchScenario: a lease that ends with nobody waiting is released
// by itself: the watcher hears "watch release" with no GC pass (rf's test
// server runs its GC hourly) and no request on the key that would evict
// the holder (issue #34). rf still answers the expired token's renew with
// error_lease_expired. A holder's disconnect releases as well.
func leaseEndWatchScenario(t *testing.T, p profile) {
	k := key("wexp")
	watcher, holder := p.dial(t), p.dial(t)
	watcher.do("watch", k, "", "ok")
	tok := holder.do("l", k, "0 1", p.grant(1))[1]
	watcher.expect("watch acquire " + k)
	watcher.expect("watch release " + k)
	if p.rf {
		holder.do("n", k, tok+" 5", "error_lease_expired")
	} else {
		holder.do("n", k, tok+" 5", "error")
	}
	holder.do("l", k, "0 30", p.grant(30))
	watcher.expect("watch acquire " + k)
	holder.c.Close()
	watcher.expect("watch release " + k)
}

func TestLeaseEndWatchRelease(t *testing.T)   { leaseEndWatchScenario(t, v2Profile()) }
func TestLeaseEndWatchReleaseRF(t *testing.T) { leaseEndWatchScenario(t, rfProfile()) }
