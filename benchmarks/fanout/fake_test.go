package fanout

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeServer is a minimal dflockd pub/sub stand-in: listen, unlisten and
// signal on literal channels. Every connection has a writer goroutine fed
// by a queue of queueLines lines; a push that finds the queue full drops
// the subscriber (closed, unsubscribed, not counted), as dflockd-ng drops
// a slow consumer. The queue is long so that a burst of fill signals never
// outruns the writer goroutine (slow under the race detector): only a
// socket that stopped taking data fills it.
type fakeServer struct {
	t          *testing.T
	ln         net.Listener
	queueLines int
	// noBound never drops a subscriber (the queue grows instead).
	noBound bool
	// skipLines > 0: a subscriber with more lines queued is not counted
	// as a receiver, though still sent the push until its queue is full.
	skipLines int
	// tamper, when set, may change or suppress (ok=false) the push line
	// for subscriber conn number id (in accept order).
	tamper func(id int, line string) (string, bool)
	// count, when set, replaces the receiver count of a signal reply.
	count func(n int) int

	mu     sync.Mutex
	subs   map[string]map[*fakeConn]bool
	conns  map[*fakeConn]bool
	nextID int
	wg     sync.WaitGroup
}

type fakeConn struct {
	id   int
	nc   net.Conn
	out  chan string
	once sync.Once
	gone chan struct{}
}

func startFake(t *testing.T, configure func(*fakeServer)) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{t: t, ln: ln, queueLines: 4096, subs: map[string]map[*fakeConn]bool{}, conns: map[*fakeConn]bool{}}
	if configure != nil {
		configure(f)
	}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.close)
	return f
}

func (f *fakeServer) addr() string { return f.ln.Addr().String() }

func (f *fakeServer) close() {
	_ = f.ln.Close()
	f.mu.Lock()
	for c := range f.conns {
		c.drop()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

func (f *fakeServer) accept() {
	defer f.wg.Done()
	for {
		nc, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		c := &fakeConn{id: f.nextID, nc: nc, out: make(chan string, f.queueLines), gone: make(chan struct{})}
		f.nextID++
		f.conns[c] = true
		f.mu.Unlock()
		f.wg.Add(2)
		go func() { defer f.wg.Done(); c.write() }()
		go func() { defer f.wg.Done(); f.serve(c) }()
	}
}

func (c *fakeConn) drop() {
	c.once.Do(func() {
		close(c.gone)
		_ = c.nc.Close()
	})
}

func (c *fakeConn) write() {
	w := bufio.NewWriter(c.nc)
	for {
		select {
		case line := <-c.out:
			if _, err := w.WriteString(line); err != nil {
				return
			}
			if len(c.out) == 0 {
				if err := w.Flush(); err != nil {
					return
				}
			}
		case <-c.gone:
			return
		}
	}
}

// reply queues an answer; answers are never dropped.
func (c *fakeConn) reply(line string) {
	select {
	case c.out <- line + "\n":
	case <-c.gone:
	}
}

func (f *fakeServer) serve(c *fakeConn) {
	defer f.unsubscribeAll(c)
	br := bufio.NewReader(c.nc)
	for {
		var lines [3]string
		for i := range lines {
			s, err := br.ReadString('\n')
			if err != nil {
				return
			}
			lines[i] = strings.TrimSuffix(s, "\n")
		}
		switch cmd, ch, arg := lines[0], lines[1], lines[2]; cmd {
		case "listen":
			f.mu.Lock()
			if f.subs[ch] == nil {
				f.subs[ch] = map[*fakeConn]bool{}
			}
			f.subs[ch][c] = true
			f.mu.Unlock()
			c.reply("ok")
		case "unlisten":
			f.mu.Lock()
			delete(f.subs[ch], c)
			f.mu.Unlock()
			c.reply("ok")
		case "signal":
			n := f.signal(ch, "sig "+ch+" "+arg+"\n")
			if f.count != nil {
				n = f.count(n)
			}
			c.reply("ok " + strconv.Itoa(n))
		default:
			c.reply("error")
		}
	}
}

func (f *fakeServer) signal(ch, line string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for c := range f.subs[ch] {
		l, ok := line, true
		if f.tamper != nil {
			l, ok = f.tamper(c.id, line)
		}
		if !ok {
			n++ // counted, never sent: a lost push
			continue
		}
		behind := f.skipLines > 0 && len(c.out) > f.skipLines
		select {
		case c.out <- l:
			if !behind {
				n++
			}
		default:
			if f.noBound {
				// Unbounded: the writer is stuck on a full socket, so
				// the line could only wait in memory; count it and let
				// it go, which is what an unbounded server would absorb.
				n++
				continue
			}
			for _, m := range f.subs {
				delete(m, c)
			}
			c.drop()
		}
	}
	return n
}

func (f *fakeServer) unsubscribeAll(c *fakeConn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.subs {
		delete(m, c)
	}
	delete(f.conns, c)
	c.drop()
}
