package session

import (
	"sync"
	"testing"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/vocab"
)

// recordingEndpoint keeps what the hub posts to it.
type recordingEndpoint struct {
	mu  sync.Mutex
	got []engine.Result
}

func (e *recordingEndpoint) Post(r engine.Result) {
	e.mu.Lock()
	e.got = append(e.got, r)
	e.mu.Unlock()
}

func (e *recordingEndpoint) results() []engine.Result {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]engine.Result(nil), e.got...)
}

// An endpoint (an HTTP session) queues in the same FIFO as protocol
// sessions, gets its late grant through Post, counts as a connection, and
// its close releases what it holds to the next protocol session in line.
func TestEndpointSharesFIFOWithSessions(t *testing.T) {
	fs := newFakeServer(t, Config{}, engine.Config{})
	tcp := fs.open()
	if got := fs.traffic(tcp, request("l", "k", "0 10")); got != "ok "+tokenFor(1)+" 10\n" {
		t.Fatalf("tcp lock: %q", got)
	}
	ep := &recordingEndpoint{}
	id := fs.hub.OpenEndpoint(ep)
	if n := fs.hub.Connections(); n != 2 {
		t.Fatalf("%d connections, want 2 (one TCP, one endpoint)", n)
	}
	lock := func(timeout int64) (engine.Result, bool) {
		return fs.hub.Call(&engine.Command{Kind: engine.KindRequest, Session: id,
			Req: vocab.Request{Op: vocab.OpLock, Key: []byte("k"), Timeout: timeout, Lease: 7}})
	}
	if r, done := lock(10); done || !r.Blocked {
		t.Fatalf("endpoint lock on a held key: %+v, want parked", r)
	}
	other := fs.open()
	fs.traffic(other, request("l", "k", "10 5")) // parks behind the endpoint
	fs.traffic(tcp, request("r", "k", tokenFor(1)))
	got := ep.results()
	if len(got) != 1 || got[0].Status != vocab.StatusOK || got[0].Kind != engine.KindGrant || got[0].Lease != 7 {
		t.Fatalf("endpoint deliveries %+v, want one grant with lease 7", got)
	}
	if len(other.out) != 0 {
		t.Fatalf("the session behind the endpoint got %q before the endpoint released", other.out)
	}
	fs.hub.CloseEndpoint(id)
	fs.pump()
	if want := "ok " + tokenFor(3) + " 5\n"; string(other.out) != want {
		t.Fatalf("after the endpoint closed the next in line got %q, want %q", other.out, want)
	}
	if n := fs.hub.Connections(); n != 2 {
		t.Fatalf("%d connections after the endpoint closed, want 2", n)
	}
	fs.hub.CloseEndpoint(id) // twice: nothing happens
}
