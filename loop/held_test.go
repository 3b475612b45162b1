package loop

import (
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// writeCounter is a gnet connection that records its writes.
type writeCounter struct {
	gnet.Conn // methods the test does not expect panic
	writes    [][]byte
	closed    bool
}

func (w *writeCounter) Write(b []byte) (int, error) {
	w.writes = append(w.writes, bytes.Clone(b))
	return len(b), nil
}
func (w *writeCounter) OutboundBuffered() int { return 0 }
func (w *writeCounter) Fd() int               { return -1 }
func (w *writeCounter) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
}
func (w *writeCounter) Wake(gnet.AsyncCallback) error { return nil }
func (w *writeCounter) Close() error {
	w.closed = true
	return nil
}

// acceptAll is a leader's replica that takes every request: their
// answers are owed until the test delivers them.
type acceptAll struct{ submitted int }

func (a *acceptAll) Submit(uint32, *vocab.Request) error {
	a.submitted++
	return nil
}
func (*acceptAll) SubmitForeign(uint32, *engine.Command) error         { return nil }
func (*acceptAll) ForceRelease(uint32, *engine.Command) error          { return nil }
func (*acceptAll) Cancel(uint32, uint32) error                         { return nil }
func (*acceptAll) Close(uint32)                                        {}
func (*acceptAll) SetTenant(uint32, string, int64, int64, int64) error { return nil }
func (*acceptAll) Engine() *engine.Engine                              { return nil }
func (*acceptAll) Now() timerwheel.Instant                             { return 0 }
func (*acceptAll) Leading() bool                                       { return true }
func (*acceptAll) LeaderAddr() string                                  { return "" }
func (*acceptAll) ClusterStats() *vocab.ClusterStats                   { return nil }

// owedConn is a loop connection on a cluster member's hub that has sent n
// try-locks, whose answers it is owed.
func owedConn(t *testing.T, n int) (*loopState, *conn, *writeCounter) {
	t.Helper()
	clock := timerwheel.NewMonoClock()
	rep := &acceptAll{}
	hub := session.NewClusterHub(session.Config{ReadTimeout: time.Minute}, rep, clock)
	srv := &Server{}
	lp := &loopState{srv: srv}
	lp.pauser.tried, lp.pauser.epfd = true, -1 // no epoll: reading is never paused
	lp.scratch.Out = make([]byte, 0, 4096)
	lp.rt.init(lp, clock.Now().Tick())
	srv.timers = timerwheel.NewDriver(clock, []timerwheel.Target{lp.rt.Locked})
	w := &writeCounter{}
	cs := &conn{c: w, lp: lp}
	cs.sess = hub.Open(cs, session.Dflockd, session.Peer{Addr: w.RemoteAddr()})
	in := strings.Repeat("l\nk\n0\n", n)
	if used, closeConn := cs.sess.Input([]byte(in)); used != len(in) || closeConn {
		t.Fatalf("Input used %d of %d bytes, close %v", used, len(in), closeConn)
	}
	if rep.submitted != n || len(w.writes) != 0 {
		t.Fatalf("%d requests submitted, %d writes; want %d and none", rep.submitted, len(w.writes), n)
	}
	return lp, cs, w
}

func answers(cs *conn, n int) []delivery {
	d := make([]delivery, n)
	for i := range d {
		d[i] = delivery{cs: cs, result: engine.Result{Status: vocab.StatusTimeout}}
	}
	return d
}

// TestDeliveredAnswersAreOneWrite: the answers an applied log entry hands
// a member's connection at once reach its socket in one write, in order.
func TestDeliveredAnswersAreOneWrite(t *testing.T) {
	const n = 16
	lp, cs, w := owedConn(t, n)
	lp.apply(answers(cs, n))
	if len(w.writes) != 1 {
		t.Fatalf("%d answers delivered together took %d writes, want 1", n, len(w.writes))
	}
	if got, want := string(w.writes[0]), strings.Repeat("timeout\n", n); got != want {
		t.Fatalf("wrote %q, want %q", got, want)
	}
	if lp.batching || len(lp.holding) != 0 || cs.held != nil {
		t.Fatalf("after the batch: batching %v, %d holding, held %v", lp.batching, len(lp.holding), cs.held != nil)
	}
}

// TestCloseSendsHeldOutput: a connection closed in the middle of a batch
// (a hang-up after its answers) sends what it holds first.
func TestCloseSendsHeldOutput(t *testing.T) {
	lp, cs, w := owedConn(t, 2)
	items := append(answers(cs, 2), delivery{cs: cs, kind: deliverHangup})
	lp.apply(items)
	if len(w.writes) != 1 || string(w.writes[0]) != "timeout\ntimeout\n" || !w.closed {
		t.Fatalf("writes %q, closed %v; want both answers in one write, then the close", w.writes, w.closed)
	}
}
