package loop

import (
	"bufio"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/vocab"
)

// Over real sockets: wrong tokens sent in parallel from one address are
// answered one per 100 ms, as over one connection (before the gate they
// were all answered within ~110 ms), while a right token from another
// address is judged at once: answered while guesses queued before it are
// still unanswered, not after them.
func TestAuthGateParallelGuessesOverTheWire(t *testing.T) {
	ts, err := startServer(Config{AuthToken: testAuth, Count: true}, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.stop()
	// 30 guesses keep the last of them queued for about 3 s after the
	// first is judged: the margin for a stalled machine between the
	// guesses all reaching the server and the right token being judged.
	const guesses = 30
	counts := func() (asked, refused uint64) {
		c := ts.srv.Hub().Counts()
		return c.Requests[vocab.OpAuth], c.Replies[vocab.StatusErrorAuth]
	}
	start := time.Now()
	var wg sync.WaitGroup
	last := make(chan time.Duration, guesses)
	for range guesses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dial(t, ts)
			c.do("auth", "_", "wrong", "error_auth")
			last <- time.Since(start)
		}()
	}
	// Every guess has reached the server (judged, or held for its slot)
	// before the right token is sent.
	waitFor(t, func() bool { asked, _ := counts(); return asked == guesses })
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	oc, err := d.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	other := &client{t: t, c: oc, rd: bufio.NewReader(oc)}
	defer oc.Close()
	other.do("auth", "_", testAuth, "ok")
	// Queued behind the guesses, the right token would have been answered
	// after the last of them was judged.
	_, refused := counts()
	if refused >= guesses {
		t.Errorf("a right token from another address was answered after all %d wrong guesses queued before it", guesses)
	}
	t.Logf("the right token was answered with %d of %d guesses refused", refused, guesses)
	wg.Wait()
	close(last)
	var slowest time.Duration
	for d := range last {
		slowest = max(slowest, d)
	}
	t.Logf("%d parallel wrong tokens answered within %v", guesses, slowest)
	// A lower bound, from before the first dial: the gate spaces the
	// judgements of one address 100 ms apart.
	if slowest < (guesses-1)*100*time.Millisecond {
		t.Fatalf("%d parallel guesses answered within %v: faster than one per 100 ms", guesses, slowest)
	}
}
