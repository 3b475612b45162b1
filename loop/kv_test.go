package loop

import (
	"testing"
	"time"
)

func countersScenario(t *testing.T, p profile) {
	k := key("ctr")
	a, b := p.dial(t), p.dial(t)
	a.do("get", k, "", "ok 0")
	a.do("incr", k, "5", "ok 5")
	a.do("incr", k, " 3 ", "ok 8")
	a.do("decr", k, "2", "ok 6")
	a.do("incr", k, "-10", "ok -4")
	b.do("get", k, "_", "ok -4")
	a.do("cset", k, "9223372036854775807", "ok")
	a.do("incr", k, "1", "error")
	b.do("get", k, "", "ok 9223372036854775807")
	a.do("decr", k, "-9223372036854775808", "error")
	a.do("incr", k, "x", "error")
	// Counters are their own key space: a lock of the same name is apart.
	a.do("l", k, "0 5", p.grant(5))
	b.do("get", k, "", "ok 9223372036854775807")
}

func TestCountersOverTheWire(t *testing.T)   { countersScenario(t, v2Profile()) }
func TestCountersOverTheWireRF(t *testing.T) { countersScenario(t, rfProfile()) }

func kvScenario(t *testing.T, p profile) {
	k := key("kv")
	a, b := p.dial(t), p.dial(t)
	a.do("kget", k, "", "nil")
	a.do("kset", k, "hello world", "ok")
	b.do("kget", k, "_", "ok hello world")
	a.do("kcas", k, "nope\tx\t", "cas_conflict")
	a.do("kcas", k, "hello world\tnext\t0", "ok")
	b.do("kget", k, "", "ok next")
	a.do("kcas", k, "\tfresh\t", "cas_conflict") // empty old: must not exist
	a.do("kdel", k, "", "ok")
	b.do("kget", k, "", "nil")
	a.do("kdel", k, "", "ok")
	a.do("kcas", k, "\tfresh\t", "ok")
	a.do("kset", k, "v\t1", "ok")
	b.do("kget", k, "", "ok v")
	a.do("kset", k, "", "error")
	a.do("kset", k, "v\tx", "error")
	a.do("kset", k, "\t5", "error")
}

func TestKVOverTheWire(t *testing.T)   { kvScenario(t, v2Profile()) }
func TestKVOverTheWireRF(t *testing.T) { kvScenario(t, rfProfile()) }

// kvTTLScenario: a 1 s TTL set by kset, and one set by kcas, end no earlier
// than a second later; an expired entry counts as absent for kcas (§B.6).
func kvTTLScenario(t *testing.T, p profile) {
	a, b := p.dial(t), p.dial(t)
	for _, set := range []func(k string){
		func(k string) { a.do("kset", k, "short\t1", "ok") },
		func(k string) { a.do("kcas", k, "\tshort\t1", "ok") },
	} {
		k, forever := key("ttl"), key("ttl")
		a.do("kset", forever, "kept", "ok")
		start := time.Now()
		set(k)
		b.do("kget", k, "", "ok short")
		waitFor(t, func() bool { return b.ask("kget", k, "") == "nil" })
		if el := time.Since(start); el < 950*time.Millisecond {
			t.Fatalf("%s gone after %v, before its 1 s TTL", k, el)
		}
		b.do("kcas", k, "short\tx\t0", "cas_conflict")
		b.do("kcas", k, "\tagain\t0", "ok")
		b.do("kget", forever, "", "ok kept")
	}
}

func TestKVTTLExpires(t *testing.T)   { kvTTLScenario(t, v2Profile()) }
func TestKVTTLExpiresRF(t *testing.T) { kvTTLScenario(t, rfProfile()) }
