package benchmarks

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/benchmarks/baseline"
	"github.com/dflockd-ng/dflockd/benchmarks/ceiling"
	"github.com/dflockd-ng/dflockd/benchmarks/child"
	"github.com/dflockd-ng/dflockd/benchmarks/loadgen"
)

// One ceiling and one baseline serve the whole package's tests, in-process
// (so the race detector sees them): stopping a gnet engine takes ~0.5 s.
var ceilingAddr, baselineAddr string

// benchServeEnv makes the test binary a child server for the benchmarks.
const benchServeEnv = "DFLOCKBENCH_E2E_SERVE"

func TestMain(m *testing.M) {
	if kind := os.Getenv(benchServeEnv); kind != "" {
		os.Exit(serveChild(kind))
	}
	c, err := ceiling.Start("127.0.0.1:0", 2)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	b, err := baseline.Start("127.0.0.1:0", baseline.Config{MaxLocks: 1 << 20})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ceilingAddr, baselineAddr = c.Addr(), b.Addr()
	code := m.Run()
	for _, p := range benchChildren {
		p.Stop()
	}
	_ = b.Close()
	_ = c.Close()
	os.Exit(code)
}

// serveChild runs one reference server until SIGTERM.
func serveChild(kind string) int {
	var addr string
	var stop func() error
	switch kind {
	case "ceiling":
		s, err := ceiling.Start("127.0.0.1:0", 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		addr, stop = s.Addr(), s.Close
	case "baseline":
		s, err := baseline.Start("127.0.0.1:0", baseline.Config{MaxLocks: 1 << 20})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		addr, stop = s.Addr(), s.Close
	default:
		fmt.Fprintln(os.Stderr, "unknown server", kind)
		return 2
	}
	fmt.Println("listening", addr)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
	_ = stop()
	return 0
}

// benchChildren are the benchmarks' servers, started on first use: a server
// in the benchmark's own process would share its GOMAXPROCS, and gnet's
// loops then wait for a P after every epoll_wait, which measures the Go
// scheduler rather than the server.
var benchChildren = map[string]*child.Process{}

func benchServer(b *testing.B, kind string) string {
	if p := benchChildren[kind]; p != nil {
		return p.Addr
	}
	b.Setenv(benchServeEnv, kind)
	p, err := child.Start(context.Background(), kind, os.Args[0], nil, os.Stderr)
	if err != nil {
		b.Fatal(err)
	}
	benchChildren[kind] = p
	return p.Addr
}

// keyRun gives every run its own key prefix: a run's connections may still
// hold keys on the server for a moment after it returns.
var keyRun atomic.Int64

func short(name, addr string, proto loadgen.Protocol, w loadgen.Workload, conns, depth int) loadgen.Config {
	return loadgen.Config{
		Name: name, Addr: addr, Proto: proto, Workload: w, Conns: conns, Depth: depth,
		Warmup: 20 * time.Millisecond, Duration: 150 * time.Millisecond,
		KeyPrefix: "e2e" + strconv.FormatInt(keyRun.Add(1), 10),
	}
}

// windows are the measured windows runOK gives a run, in turn. How much
// a window of a given length holds depends on how the machine schedules
// the test, which no assertion may depend on: a window that measured too
// little (a loaded machine stalled through it) is not judged but retried,
// longer. The last is longer than any stall.
var windows = []time.Duration{150 * time.Millisecond, 600 * time.Millisecond, 2400 * time.Millisecond, 9600 * time.Millisecond}

// runOK runs cfg, failing the test on any error, until a window has
// measured complete cycles and enough (if not nil) holds of its result;
// each run has keys of its own.
func runOK(t *testing.T, cfg loadgen.Config, enough func(*loadgen.Result) bool) *loadgen.Result {
	t.Helper()
	var res *loadgen.Result
	for _, w := range windows {
		cfg.Duration = w
		cfg.KeyPrefix = "e2e" + strconv.FormatInt(keyRun.Add(1), 10)
		var err error
		res, err = loadgen.Run(context.Background(), cfg)
		if err != nil {
			t.Fatalf("%s %s c=%d d=%d: %v", cfg.Name, cfg.Workload, cfg.Conns, cfg.Depth, err)
		}
		if res.Requests > 0 && res.Pairs > 0 && (enough == nil || enough(res)) {
			return res
		}
	}
	t.Fatalf("%s %s c=%d d=%d: not enough measured even in %v: %v", cfg.Name, cfg.Workload, cfg.Conns, cfg.Depth, cfg.Duration, res)
	return nil
}

// Every workload the load generator has runs clean against both reference
// servers: their replies are what the generator expects of dflockd.
func TestWorkloadsAgainstReferenceServers(t *testing.T) {
	for _, tc := range []struct {
		w     loadgen.Workload
		depth int
	}{
		{loadgen.Lock, 1}, {loadgen.Lock, 16}, {loadgen.Hot, 1}, {loadgen.Sem, 1},
		{loadgen.Try, 4}, {loadgen.Mixed, 1}, {loadgen.Mixed, 8},
	} {
		for _, srv := range []struct{ name, addr string }{{"ceiling", ceilingAddr}, {"baseline", baselineAddr}} {
			runOK(t, short(srv.name, srv.addr, loadgen.ProtoLine, tc.w, 4, tc.depth), nil)
		}
	}
}

// On the baseline shared keys are really contended: try-locks miss.
func TestBaselineContention(t *testing.T) {
	// runOK fails the test if no window, however long, saw a miss.
	runOK(t, short("baseline", baselineAddr, loadgen.ProtoLine, loadgen.Try, 8, 4),
		func(res *loadgen.Result) bool { return res.Misses > 0 })
}

func TestRedis(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed")
	}
	p, err := child.StartRedis(context.Background(), "redis-server", os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	for _, rel := range []loadgen.RedisRelease{loadgen.ReleaseCAS, loadgen.ReleaseDel} {
		for _, w := range []loadgen.Workload{loadgen.Lock, loadgen.Try, loadgen.Mixed} {
			cfg := short("redis", p.Addr, loadgen.ProtoRedis, w, 4, 4)
			cfg.RedisRelease = rel
			runOK(t, cfg, nil)
		}
	}
}

// lockClient does synchronous l+r round trips on one connection.
type lockClient struct {
	nc  net.Conn
	br  *bufio.Reader
	req []byte
}

func dialLock(b *testing.B, addr string) *lockClient {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	return &lockClient{nc: nc, br: bufio.NewReader(nc)}
}

func (c *lockClient) pair(key string) error {
	c.req = append(append(append(c.req[:0], "l\n"...), key...), "\n10 30\n"...)
	if _, err := c.nc.Write(c.req); err != nil {
		return err
	}
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return err
	}
	f := strings.Fields(string(line))
	if len(f) != 3 || f[0] != "ok" {
		return fmt.Errorf("acquire: %q", line)
	}
	c.req = append(append(append(append(append(c.req[:0], "r\n"...), key...), '\n'), f[1]...), '\n')
	if _, err := c.nc.Write(c.req); err != nil {
		return err
	}
	if line, err = c.br.ReadSlice('\n'); err != nil || string(line) != "ok\n" {
		return fmt.Errorf("release: %q %v", line, err)
	}
	return nil
}

// benchPairs measures uncontended acquire+release round trips, one
// connection and one key per parallel goroutine; ns/op is per pair.
func benchPairs(b *testing.B, addr string) {
	var id atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		c := dialLock(b, addr)
		defer c.nc.Close()
		key := "bench.go" + strconv.FormatInt(id.Add(1), 10)
		for pb.Next() {
			if err := c.pair(key); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// The servers run as child processes (see benchChildren).
func BenchmarkCeilingLockUnlock(b *testing.B)  { benchPairs(b, benchServer(b, "ceiling")) }
func BenchmarkBaselineLockUnlock(b *testing.B) { benchPairs(b, benchServer(b, "baseline")) }
