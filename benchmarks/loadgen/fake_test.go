package loadgen

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// fakeServer is a scriptable dflockd or Redis stand-in for the load
// generator's tests. Its lock table is deliberately simple (no waiting):
// enough to check that the client sends what it should and handles what it
// gets.
type fakeServer struct {
	t     *testing.T
	ln    net.Listener
	redis bool
	// batch > 0 holds replies back until that many requests of one
	// connection are unanswered, then sends them all in one write: the
	// client must really keep that many in flight to make progress.
	batch int
	// acquireReply and releaseReply, when set, are sent to every Redis SET
	// and to every DEL and EVAL instead of what the lock logic would say.
	acquireReply, releaseReply string
	// respReply, when set and returning a non-empty reply, overrides the
	// logic for that Redis command.
	respReply func(args []string) string
	// reply, when set, overrides the lock logic for dflockd requests.
	// Returning close=true drops the connection without replying.
	reply func(n int64, cmd, key, arg string) (line string, close bool)
	// tls, when set, makes the listener TLS only.
	tls *tls.Config
	// auth, when set, wants every connection's first request to be
	// "auth _ <token>" and answers it auth(token); a connection whose
	// first request is another gets error_auth and a close, as dflockd
	// with a token or a policy does. Tokens seen are in authTokens.
	auth func(token string) string

	authTokens []string // guarded by mu

	requests    atomic.Int64
	maxInFlight atomic.Int64
	rejected    atomic.Int64 // requests the lock logic answered with an error

	mu     sync.Mutex
	held   map[string]string // key → token (dflockd) or value (Redis)
	tokens uint64
	prim   primState // counters, KV and lists (fake_prim_test.go)
	wg     sync.WaitGroup
	conns  map[net.Conn]struct{}
}

func startFake(t *testing.T, configure func(*fakeServer)) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{t: t, ln: ln, held: map[string]string{}, conns: map[net.Conn]struct{}{}}
	if configure != nil {
		configure(f)
	}
	if f.tls != nil {
		f.ln = tls.NewListener(ln, f.tls)
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
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

func (f *fakeServer) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns[c] = struct{}{}
		f.mu.Unlock()
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer c.Close()
			f.serve(c)
		}()
	}
}

func (f *fakeServer) serve(c net.Conn) {
	br := bufio.NewReader(c)
	if f.auth != nil && !f.redis && !f.authFirst(c, br) {
		return
	}
	var out []byte
	unanswered := 0
	for {
		var reply string
		var drop bool
		var err error
		if f.redis {
			reply, err = f.redisRequest(br)
		} else {
			reply, drop, err = f.lineRequest(br)
		}
		if err != nil || drop {
			return
		}
		out = append(out, reply...)
		unanswered++
		for m := f.maxInFlight.Load(); int64(unanswered) > m && !f.maxInFlight.CompareAndSwap(m, int64(unanswered)); m = f.maxInFlight.Load() {
		}
		// Without batching, answer whenever the client has nothing more
		// buffered, like a real server that replies once per read.
		if (f.batch > 0 && unanswered < f.batch) || (f.batch == 0 && br.Buffered() > 0) {
			continue
		}
		if _, err := c.Write(out); err != nil {
			return
		}
		out, unanswered = out[:0], 0
	}
}

// authFirst reads a connection's first request and answers it as an
// auth; false: the connection is done.
func (f *fakeServer) authFirst(c net.Conn, br *bufio.Reader) bool {
	var lines [3]string
	for i := range lines {
		var err error
		if lines[i], err = readLine(br); err != nil {
			return false
		}
	}
	if lines[0] != "auth" || lines[1] != "_" {
		_, _ = c.Write([]byte("error_auth\n"))
		return false
	}
	f.mu.Lock()
	f.authTokens = append(f.authTokens, lines[2])
	f.mu.Unlock()
	reply := f.auth(lines[2])
	_, err := c.Write([]byte(reply + "\n"))
	return err == nil && reply == "ok"
}

func readLine(br *bufio.Reader) (string, error) {
	s, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(s, "\n"), nil
}

func (f *fakeServer) lineRequest(br *bufio.Reader) (string, bool, error) {
	var lines [3]string
	for i := range lines {
		var err error
		if lines[i], err = readLine(br); err != nil {
			return "", false, err
		}
	}
	n := f.requests.Add(1)
	cmd, key, arg := lines[0], lines[1], lines[2]
	if f.reply != nil {
		line, drop := f.reply(n, cmd, key, arg)
		return line + "\n", drop, nil
	}
	return f.lockLogic(cmd, key, arg) + "\n", false, nil
}

// lockLogic grants free keys at once, answers "timeout" to a busy one and
// releases only with the token it granted.
func (f *fakeServer) lockLogic(cmd, key, arg string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	fields := strings.Fields(arg)
	switch cmd {
	case "l", "sl":
		if _, busy := f.held[cmd+key]; busy {
			return "timeout"
		}
		f.tokens++
		tok := fmt.Sprintf("%032x", f.tokens)
		f.held[cmd+key] = tok
		return "ok " + tok + " " + fields[len(fields)-1]
	case "r", "sr":
		lk := "l" + key
		if cmd == "sr" {
			lk = "sl" + key
		}
		if f.held[lk] != arg {
			f.rejected.Add(1)
			return "error"
		}
		delete(f.held, lk)
		return "ok"
	}
	if reply, ok := f.prim.line(cmd, key, arg); ok {
		return reply
	}
	f.rejected.Add(1)
	return "error"
}

// readRESPCommand reads one RESP array of bulk strings.
func readRESPCommand(br *bufio.Reader) ([]string, error) {
	head, err := br.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(head, "*") || !strings.HasSuffix(head, "\r\n") {
		return nil, fmt.Errorf("bad array header %q", head)
	}
	n, err := strconv.Atoi(head[1 : len(head)-2])
	if err != nil {
		return nil, err
	}
	args := make([]string, n)
	for i := range args {
		h, err := br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(h, "$"), "\r\n"))
		if err != nil {
			return nil, err
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:size])
	}
	return args, nil
}

func (f *fakeServer) redisRequest(br *bufio.Reader) (string, error) {
	args, err := readRESPCommand(br)
	if err != nil {
		return "", err
	}
	f.requests.Add(1)
	if f.respReply != nil {
		if r := f.respReply(args); r != "" {
			return r, nil
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case args[0] == "SET" && f.acquireReply != "":
		return f.acquireReply, nil
	case len(args) == 6 && args[0] == "SET" && args[3] == "NX" && args[4] == "PX":
		if _, busy := f.held[args[1]]; busy {
			return "$-1\r\n", nil
		}
		f.held[args[1]] = args[2]
		return "+OK\r\n", nil
	case (args[0] == "DEL" || args[0] == "EVAL") && f.releaseReply != "":
		return f.releaseReply, nil
	case len(args) == 2 && args[0] == "DEL":
		if _, ok := f.held[args[1]]; !ok {
			return ":0\r\n", nil
		}
		delete(f.held, args[1])
		return ":1\r\n", nil
	case len(args) == 5 && args[0] == "EVAL" && args[1] == casScript && args[2] == "1":
		if f.held[args[3]] != args[4] {
			return ":0\r\n", nil
		}
		delete(f.held, args[3])
		return ":1\r\n", nil
	}
	if reply, ok := f.prim.resp(args); ok {
		return reply, nil
	}
	f.rejected.Add(1)
	return "-ERR unknown command\r\n", nil
}
