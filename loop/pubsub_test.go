package loop

import (
	"net"

	"github.com/dflockd-ng/dflockd/engine"
	"strings"
	"testing"
	"time"
)

func TestSignalOverTheWire(t *testing.T) {
	ch := key("ch")
	a, b, sender := dial(t, plain), dial(t, plain), dial(t, plain)
	a.do("listen", ch+".>", "", "ok")
	b.do("listen", ch+".*", "", "ok")
	sender.do("signal", ch+".x", "hello there", "ok 2")
	a.expect("sig " + ch + ".x hello there")
	b.expect("sig " + ch + ".x hello there")
	sender.do("signal", ch+".x.y", "deep", "ok 1")
	a.expect("sig " + ch + ".x.y deep")
	b.silent(100 * time.Millisecond)
	// A signal to oneself: the reply comes first, then the push.
	a.do("signal", ch+".me", "self", "ok 2")
	a.expect("sig " + ch + ".me self")
	b.expect("sig " + ch + ".me self")
}

func TestSlowConsumerDisconnected(t *testing.T) {
	// No --write-timeout here: the push backlog bound alone must act.
	ts, err := startServer(Config{}, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.stop()
	ch := key("slow")
	slow, fast, sender := dial(t, ts), dial(t, ts), dial(t, ts)
	slow.c.(*net.TCPConn).SetReadBuffer(4096)
	slow.do("listen", ch, "", "ok")
	fast.do("listen", ch, "", "ok")
	payload := strings.Repeat("p", 200)
	// The slow subscriber never reads; the fast one reads everything.
	// ~11 MB per subscriber: more than the kernel socket buffers take, so
	// the server-side backlog of the non-reader must grow past its bound.
	const signals = 40000
	got := make(chan int, 1)
	go func() {
		n := 0
		fast.c.SetReadDeadline(time.Now().Add(30 * time.Second))
		for n < signals {
			if _, err := fast.rd.ReadString('\n'); err != nil {
				break
			}
			n++
		}
		got <- n
	}()
	for i := 0; i < signals; i++ {
		sender.send("signal", ch, payload)
		if i%500 == 499 {
			for j := 0; j < 500; j++ {
				if _, err := sender.line(10 * time.Second); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if n := <-got; n != signals {
		t.Fatalf("fast subscriber got %d of %d pushes", n, signals)
	}
	// The slow one was cut off: its subscription is gone.
	waitFor(t, func() bool {
		c := dial(t, ts)
		defer c.c.Close()
		c.send("signal", ch, "probe")
		line, _ := c.line(5 * time.Second)
		fast.line(time.Second) // drain the probe's push
		return line == "ok 1"
	})
}
