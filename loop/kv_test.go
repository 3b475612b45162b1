package loop

import "testing"

func TestCountersOverTheWire(t *testing.T) {
	k := key("ctr")
	a, b := dial(t, plain), dial(t, plain)
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
}

func TestKVOverTheWire(t *testing.T) {
	k := key("kv")
	a, b := dial(t, plain), dial(t, plain)
	a.do("kget", k, "", "nil")
	a.do("kset", k, "hello world", "ok")
	b.do("kget", k, "_", "ok hello world")
	a.do("kcas", k, "nope\tx\t", "cas_conflict")
	a.do("kcas", k, "hello world\tnext\t0", "ok")
	b.do("kget", k, "", "ok next")
	a.do("kcas", k, "\tfresh\t", "cas_conflict") // empty old: must not exist
	a.do("kdel", k, "", "ok")
	a.do("kdel", k, "", "ok")
	a.do("kcas", k, "\tfresh\t", "ok")
	a.do("kset", k, "v\t1", "ok")
	b.do("kget", k, "", "ok v")
	a.do("kset", k, "", "error")
	a.do("kset", k, "v\tx", "error")
}

func TestUnbuiltRFCommandsAnswerError(t *testing.T) {
	c := dial(t, plain)
	c.do("elect", key("e"), "0", "error")
	c.do("observe", key("e"), "", "error")
	c.do("ping", "_", "_", "ok") // the connection stays usable
}
