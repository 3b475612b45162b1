package engine

import (
	"fmt"
	"sync"
	"testing"

	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// On a single node, loops apply commands side by side. A release on one
// loop that grants a waiter looks at the waiter's queue (resumeQueues)
// while the waiter's own loop may be closing it: neither may write what
// the other reads. Under -race, any such write is reported.
func TestCloseWhileAnotherLoopGrantsTheWaiter(t *testing.T) {
	e := New(Config{TokenKey: testKey})
	at := timerwheel.Instant(1e9)
	req := func(s SessionID, cmd, key, arg string, fx *Effects) Result {
		r, err := parse.Parse(parse.Frame{Cmd: []byte(cmd), Key: []byte(key), Arg: []byte(arg)})
		if err != nil {
			t.Fatal(err)
		}
		return e.Apply(&Command{Kind: KindRequest, Session: s, At: at, Req: r}, fx)
	}
	granted := 0
	for i := range 200 {
		var fx Effects
		holder := e.Apply(&Command{Kind: KindOpen, At: at}, &fx).Session
		waiter := e.Apply(&Command{Kind: KindOpen, At: at}, &fx).Session
		key := fmt.Sprintf("k%d", i)
		token := tok(req(holder, "l", key, "10", &fx))
		if r := req(waiter, "l", key, "10", &fx); !r.Blocked {
			t.Fatalf("second lock of %s: %+v, want it to wait", key, r)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		var relFx, closeFx Effects
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			req(holder, "r", key, token, &relFx)
		}()
		go func() {
			defer wg.Done()
			<-start
			e.Apply(&Command{Kind: KindClose, Session: waiter, At: at}, &closeFx)
		}()
		close(start)
		wg.Wait()
		for _, f := range relFx.List {
			if f.To == waiter {
				granted++
			}
		}
		e.Apply(&Command{Kind: KindClose, Session: holder, At: at}, &fx)
	}
	t.Logf("the release reached the closing waiter in %d of 200 rounds", granted)
}
