package loop

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
)

// A queue-group member that stops reading is passed over once its unread
// backlog reaches the bound, instead of being disconnected with a message
// it would never read: every signal reaches exactly one live member and
// nothing is lost (spec §B.9 rule 2).
func TestQueueGroupFallsBackPastBackloggedMember(t *testing.T) {
	// No read timeout short enough to close the silent member mid-test.
	ts, err := startServer(Config{}, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.stop()
	ch := key("group")
	// The fast member shares the sender's event loop, so its pushes leave
	// with each slice of the sender's input; across loops, a starved
	// loop on a busy 2-core runner could make it look behind too.
	sender, slow, fast := dial(t, ts), dial(t, ts), dial(t, ts)
	// A small window makes the silent member's kernel buffers fill early;
	// not below the loopback MSS (64 KiB), or reading it back later would
	// crawl: the sender's zero-window probes back off to seconds while the
	// receiver avoids advertising a window under one MSS.
	slow.c.(*net.TCPConn).SetReadBuffer(256 << 10)
	slow.do("listen", ch, "workers", "ok")
	fast.do("listen", ch, "workers", "ok")
	payload := strings.Repeat("p", 250) // the longest argument line (spec §A.2)
	// Round-robin alone would give the slow member 10 MB: far more than
	// the kernel buffers plus the 64 KiB bound take.
	const signals = 80000
	got := make(chan int, 1)
	go func() {
		n := 0
		fast.c.SetReadDeadline(time.Now().Add(60 * time.Second))
		for {
			line, err := fast.rd.ReadString('\n')
			if err != nil || line == "sig "+ch+" done\n" {
				break
			}
			n++
		}
		got <- n
	}()
	// Batches of 50 in flight: a burst bigger than the bound could leave
	// even a reading member behind for a moment, and then the group
	// rightly has nobody to take a signal.
	sender.signalBurst(ch, payload, signals, 50, "ok 1") // always one member
	// The end marker goes to whichever member is next; send it until the
	// fast one has it.
	var toFast int
	for marker := 0; ; marker++ {
		sender.do("signal", ch, "done", "ok 1")
		select {
		case toFast = <-got:
		case <-time.After(200 * time.Millisecond):
			if marker > 50 {
				t.Fatal("fast member never got the end marker")
			}
			continue
		}
		break
	}
	// The slow member is still connected and holds everything else.
	slow.c.(*net.TCPConn).SetReadBuffer(4 << 20)
	toSlow := 0
	slow.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	for toFast+toSlow < signals {
		line, err := slow.rd.ReadString('\n')
		if err != nil {
			t.Fatalf("slow member after %d pushes (fast %d of %d): %v", toSlow, toFast, signals, err)
		}
		if line != "sig "+ch+" "+payload+"\n" {
			continue // an end marker
		}
		toSlow++
	}
	if toSlow >= signals/2 {
		t.Fatalf("slow member took %d of %d: never passed over", toSlow, signals)
	}
	t.Logf("fast member %d, slow member %d of %d", toFast, toSlow, signals)
}
