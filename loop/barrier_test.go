package loop

import (
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
)

func TestBarrierOverTheWire(t *testing.T) {
	k := key("bar")
	a, b, c := dial(t, plain), dial(t, plain), dial(t, plain)
	a.send("bwait", k, "3 10")
	b.send("bwait", k, "3 10")
	a.silent(100 * time.Millisecond)
	c.do("bwait", k, "3 10", "ok") // the third trips it for all
	a.expect("ok")
	b.expect("ok")
}

func TestBarrierBreaksRF(t *testing.T) {
	ts, err := startServer(Config{RF: true}, engine.Config{RF: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.stop()
	k := key("bar")
	a, b, c := dial(t, ts), dial(t, ts), dial(t, ts)
	a.send("bwait", k, "3 10")
	b.send("bwait", k, "3 1") // leaves after 1 s: breaks the barrier
	b.expect("timeout")
	a.expect("timeout")
	c.do("bwait", k, "3 0", "timeout")
}
