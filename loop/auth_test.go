package loop

import (
	"bufio"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
)

// Over real sockets: 20 wrong tokens in parallel from one address take 2 s
// to be answered (one per 100 ms, as over one connection; before the gate
// they took ~110 ms), while a right token from another address is answered
// at once.
func TestAuthGateParallelGuessesOverTheWire(t *testing.T) {
	ts, err := startServer(Config{AuthToken: testAuth}, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.stop()
	const guesses = 20
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
	time.Sleep(300 * time.Millisecond) // the guesses are queued by now
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	oc, err := d.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	other := &client{t: t, c: oc, rd: bufio.NewReader(oc)}
	defer oc.Close()
	t0 := time.Now()
	other.do("auth", "_", testAuth, "ok")
	if el := time.Since(t0); el > 50*time.Millisecond {
		t.Errorf("a right token from another address took %v", el)
	}
	wg.Wait()
	close(last)
	var slowest time.Duration
	for d := range last {
		slowest = max(slowest, d)
	}
	t.Logf("%d parallel wrong tokens answered within %v", guesses, slowest)
	if slowest < (guesses-1)*100*time.Millisecond {
		t.Fatalf("%d parallel guesses answered within %v: faster than one per 100 ms", guesses, slowest)
	}
}
