package loop

import (
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
)

// rwScenario: readers share while a writer waits, a later reader does not
// barge past the writer, and the writer's release hands over to it.
// grant is the reply pattern of a grant with a 30 s lease.
func rwScenario(t *testing.T, ts *testServer, grant string) {
	k := key("rw")
	r1, r2, w, r3 := dial(t, ts), dial(t, ts), dial(t, ts), dial(t, ts)
	t1 := r1.do("rl", k, "0 30", grant)[1]
	t2 := r2.do("rl", k, "0 30", grant)[1]
	w.send("wl", k, "10 30")
	w.silent(100 * time.Millisecond)
	r3.do("rl", k, "0 30", "timeout") // no barging past the queued writer
	r3.send("rl", k, "10 30")
	r1.do("rr", k, t1, "ok")
	w.silent(100 * time.Millisecond)
	r2.do("rr", k, t2, "ok")
	tw := w.expect(grant)[3:35]
	r3.silent(100 * time.Millisecond)
	w.do("wr", k, tw, "ok")
	r3.expect(grant)
	r1.do("l", k, "0", "error_type_mismatch")
}

func TestRWLockOverTheWire(t *testing.T) {
	rwScenario(t, plain, "ok T 30")
}

func TestRWLockOverTheWireRF(t *testing.T) {
	ts, err := startServer(Config{RF: true}, engine.Config{RF: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.stop()
	rwScenario(t, ts, "ok T 30 *") // rf grants carry the fence
}
