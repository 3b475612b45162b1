package suite

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/dflockd-ng/dflockd/benchmarks/procstat"
)

// Memory scenarios: what a server's resident set grows by per held lock,
// per idle connection and per queued waiter.
const (
	ScenLocks   = "held locks"
	ScenIdle    = "idle connections"
	ScenWaiters = "waiters on one key"
)

// MemResult is one memory scenario on one freshly started server.
type MemResult struct {
	Target   string `json:"target"`
	Scenario string `json:"scenario"`
	Items    int    `json:"items"`
	Conns    int    `json:"conns"`
	Before   int64  `json:"rss_before_bytes"`
	After    int64  `json:"rss_after_bytes"`
	// The idle server's RSS split into anonymous pages (heap, stacks) and
	// file-backed ones (the binary's pages it touched).
	AnonBefore int64   `json:"rss_anon_before_bytes,omitempty"`
	FileBefore int64   `json:"rss_file_before_bytes,omitempty"`
	PerItem    float64 `json:"bytes_per_item"`
	Duration   int64   `json:"setup_ns"`
}

// MemTarget is a server to load for a memory scenario.
type MemTarget struct {
	Name  string
	Addr  string
	PID   int
	Redis bool // RESP instead of the dflockd line protocol
}

// memTimeout bounds every network step of a scenario.
const memTimeout = 60 * time.Second

// rss waits until the server's resident set stops growing (two samples in
// a row within 64 KiB, at most 10 s) and returns it.
func rss(pid int) (procstat.Memory, error) { return StableRSS(pid) }

// StableRSS waits until process pid's resident set stops changing (two
// samples in a row within 64 KiB of the one before, 250 ms apart, at most
// 10 s) and returns it: an idle server's RSS, as the memory scenarios
// read it.
func StableRSS(pid int) (procstat.Memory, error) {
	var last int64 = -1 << 40
	stable := 0
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, err := procstat.ReadMemory(pid)
		if err != nil {
			return procstat.Memory{}, err
		}
		d := m.RSS - last
		if d < 0 {
			d = -d
		}
		if d < 64<<10 {
			stable++
		} else {
			stable = 0
		}
		last = m.RSS
		if stable >= 2 || time.Now().After(deadline) {
			return m, nil
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// dialMany opens n connections with a few dialers in parallel.
func dialMany(ctx context.Context, addr string, n int) ([]net.Conn, error) {
	conns := make([]net.Conn, n)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	next := make(chan int)
	d := net.Dialer{Timeout: 10 * time.Second}
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c, err := d.DialContext(ctx, "tcp", addr)
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("dial %s (connection %d of %d): %w", addr, i+1, n, err)
					}
					mu.Unlock()
					continue
				}
				conns[i] = c
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		closeAll(conns)
		return nil, first
	}
	return conns, nil
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		if c != nil {
			_ = c.Close()
		}
	}
}

// exchange writes req on c and reads n reply lines, each of which must
// start with want.
func exchange(c net.Conn, target string, req []byte, n int, want string) error {
	_ = c.SetDeadline(time.Now().Add(memTimeout))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write(req); err != nil {
		return fmt.Errorf("%s: write: %w", target, err)
	}
	r := bufio.NewReaderSize(c, 64<<10)
	for i := 0; i < n; i++ {
		line, err := r.ReadString('\n')
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("%s: reply %d of %d: %w", target, i+1, n, err)
		}
		if !strings.HasPrefix(line, want) {
			return fmt.Errorf("%s: reply %d of %d: want %q…, got %q", target, i+1, n, want, line)
		}
	}
	return nil
}

func lineReq(cmd, key, arg string) string { return cmd + "\n" + key + "\n" + arg + "\n" }

func respReq(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// parallel runs fn for every connection index with at most 64 at a time
// and returns the first error.
func parallel(n int, fn func(i int) error) error {
	sem := make(chan struct{}, 64)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// HeldLocks acquires locks distinct keys over conns connections (each
// connection pipelines its share of try-lock requests with a long lease)
// and measures the RSS growth.
func HeldLocks(ctx context.Context, t MemTarget, locks, conns int) (*MemResult, error) {
	res := &MemResult{Target: t.Name, Scenario: ScenLocks, Items: locks, Conns: conns}
	before, err := rss(t.PID)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	cs, err := dialMany(ctx, t.Addr, conns)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	defer closeAll(cs)
	per := locks / conns
	err = parallel(conns, func(i int) error {
		var b strings.Builder
		n := per
		if i == conns-1 {
			n = locks - per*(conns-1)
		}
		for j := 0; j < n; j++ {
			key := fmt.Sprintf("mem.lock.c%d.k%d", i, j)
			if t.Redis {
				b.WriteString(respReq("SET", key, "v", "NX", "PX", "600000"))
			} else {
				b.WriteString(lineReq("l", key, "0 600"))
			}
		}
		want := "ok "
		if t.Redis {
			want = "+OK"
		}
		return exchange(cs[i], t.Name, []byte(b.String()), n, want)
	})
	if err != nil {
		return nil, err
	}
	return finish(res, t, before, start)
}

// IdleConns opens n connections, makes sure the server has served each
// (one ping apiece), and measures the RSS growth.
func IdleConns(ctx context.Context, t MemTarget, n int) (*MemResult, error) {
	res := &MemResult{Target: t.Name, Scenario: ScenIdle, Items: n, Conns: n}
	before, err := rss(t.PID)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	cs, err := dialMany(ctx, t.Addr, n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	defer closeAll(cs)
	req, want := lineReq("ping", "_", "_"), "ok"
	if t.Redis {
		req, want = respReq("PING"), "+PONG"
	}
	if err := parallel(n, func(i int) error { return exchange(cs[i], t.Name, []byte(req), 1, want) }); err != nil {
		return nil, err
	}
	return finish(res, t, before, start)
}

// Waiters has one connection hold a lock and n others queue on the same
// key (blocking acquires, each on its own connection), and measures the
// RSS growth (the held lock and the connections included: a waiter needs
// its connection).
func Waiters(ctx context.Context, t MemTarget, n int) (*MemResult, error) {
	res := &MemResult{Target: t.Name, Scenario: ScenWaiters, Items: n, Conns: n + 1}
	before, err := rss(t.PID)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	cs, err := dialMany(ctx, t.Addr, n+1)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	defer closeAll(cs)
	if err := exchange(cs[0], t.Name, []byte(lineReq("l", "mem.hot", "0 600")), 1, "ok "); err != nil {
		return nil, err
	}
	req := []byte(lineReq("l", "mem.hot", "300 600"))
	err = parallel(n, func(i int) error {
		c := cs[i+1]
		_ = c.SetWriteDeadline(time.Now().Add(memTimeout))
		if _, err := c.Write(req); err != nil {
			return fmt.Errorf("%s: waiter %d: write: %w", t.Name, i, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// No reply comes while the holder holds; a quick read on a sample of
	// waiters catches a server that answers them anyway (an error reply
	// such as error_max_waiters would make the figure meaningless).
	for _, i := range []int{1, n / 2, n} {
		c := cs[i]
		_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		buf := make([]byte, 128)
		k, err := c.Read(buf)
		if k > 0 {
			return nil, fmt.Errorf("%s: waiter %d was answered %q while the lock is held", t.Name, i, buf[:k])
		}
		if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			return nil, fmt.Errorf("%s: waiter %d: %v", t.Name, i, err)
		}
		_ = c.SetReadDeadline(time.Time{})
	}
	return finish(res, t, before, start)
}

func finish(res *MemResult, t MemTarget, before procstat.Memory, start time.Time) (*MemResult, error) {
	m, err := rss(t.PID)
	if err != nil {
		return nil, err
	}
	after := m.RSS
	res.Before, res.After = before.RSS, after
	res.AnonBefore, res.FileBefore = before.RssAnon, before.RssFile
	res.Duration = int64(time.Since(start))
	res.PerItem = float64(after-before.RSS) / float64(res.Items)
	return res, nil
}
