package metrics

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/fence"
	"github.com/dflockd-ng/dflockd/loop"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// server is a gnet server in process with counting on, and its /metrics.
type server struct {
	addr    string
	srv     *loop.Server
	metrics *httptest.Server
	done    chan error
}

func startServer(t *testing.T) *server {
	t.Helper()
	// Bound here and handed over: no port picked by listening and closing
	// that another process could take before the server binds it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	fences := fence.NewVolatile()
	srv := loop.New(loop.Config{Listeners: []net.Listener{l}, Loops: 2, Ready: ready, Count: true,
		ReadTimeout: 5 * time.Second, Engine: engine.Config{FenceFloor: fences.Seed(), Ceiling: fences}},
		timerwheel.NewMonoClock())
	s := &server{addr: l.Addr().String(), srv: srv, done: make(chan error, 1)}
	go func() { s.done <- srv.Serve() }()
	// Registered before anything can fail: the server is shut down and
	// Serve has returned (a Shutdown before the loops run ends it as soon
	// as gnet boots) before the test ends. The test's own context is
	// cancelled by the time cleanups run: Shutdown gets one of its own.
	t.Cleanup(func() {
		if s.metrics != nil {
			s.metrics.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			t.Errorf("Serve still running 30 s after Shutdown")
		}
	})
	select {
	case <-ready:
	case err := <-s.done:
		s.done <- err // for the cleanup
		t.Fatalf("serve: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not start within 20 s")
	}
	reg := NewRegistry(Sources{Engine: srv.Engine(), Hub: srv.Hub(), Fences: fences,
		Transports: map[string]func() int{"tcp": srv.Connections}, Start: time.Now()})
	s.metrics = httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return s
}

// scrape parses /metrics with Prometheus's own text parser.
func (s *server) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(s.metrics.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the exposition does not parse: %v", err)
	}
	return fams
}

// value is the value of the family's sample whose labels include want
// (name=value pairs); -1 if there is none.
func value(fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(want); i += 2 {
			found := false
			for _, l := range m.Label {
				if l.GetName() == want[i] && l.GetValue() == want[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		}
	}
	return -1
}

// client is a line-protocol connection.
type client struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, r: bufio.NewReader(c)}
}

func (c *client) do(cmd, key, arg string) string {
	c.t.Helper()
	if _, err := fmt.Fprintf(c.c, "%s\n%s\n%s\n", cmd, key, arg); err != nil {
		c.t.Fatal(err)
	}
	_ = c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("%s %s: %v", cmd, key, err)
	}
	return strings.TrimSuffix(line, "\n")
}

// The counters move as the requests say: grants, releases, timeouts,
// requests by command, errors by status, held locks and waiters, pushes.
func TestMetricsFollowRequests(t *testing.T) {
	s := startServer(t)
	before := s.scrape(t)
	if v := value(before, "dflockd_ready"); v != 1 {
		t.Fatalf("dflockd_ready = %v", v)
	}
	a, b := dial(t, s.addr), dial(t, s.addr)
	tok := strings.Fields(a.do("l", "m1", "0 30"))[1]
	if got := b.do("l", "m1", "0"); got != "timeout" {
		t.Fatalf("try on a held lock: %q", got)
	}
	b.do("sl", "s1", "0 3 30")
	b.do("bogus", "x", "y")                             // error
	b.do("r", "m1", "0000000000000000ffffffffffffffff") // error: not the token
	if got := b.do("listen", "ch", ""); got != "ok" {
		t.Fatal(got)
	}
	if got := a.do("signal", "ch", "hello"); got != "ok 1" {
		t.Fatalf("signal: %q", got)
	}
	if line, _ := b.r.ReadString('\n'); line != "sig ch hello\n" {
		t.Fatalf("push: %q", line)
	}
	m := s.scrape(t)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"dflockd_grants_total", nil, 2},
		{"dflockd_timeouts_total", nil, 0}, // a try is no timed-out wait
		{"dflockd_locks_held", nil, 1},
		{"dflockd_semaphore_holders", nil, 1},
		{"dflockd_requests_total", []string{"command", "l"}, 2},
		{"dflockd_requests_total", []string{"command", "r"}, 1},
		{"dflockd_requests_total", []string{"command", "unknown"}, 1},
		{"dflockd_errors_total", []string{"status", "error"}, 2},
		{"dflockd_pushes_total", nil, 1},
		{"dflockd_connections", nil, 2},
		{"dflockd_transport_connections", []string{"transport", "tcp"}, 2},
	} {
		if got := value(m, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// A queued waiter, then the release hands over: one more grant, one
	// release; a timed-out wait counts.
	c := dial(t, s.addr)
	if _, err := fmt.Fprintf(c.c, "l\nm1\n10\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return value(s.scrape(t), "dflockd_lock_waiters") == 1 })
	if got := a.do("r", "m1", tok); got != "ok" {
		t.Fatalf("release: %q", got)
	}
	if line, _ := c.r.ReadString('\n'); !strings.HasPrefix(line, "ok ") {
		t.Fatalf("waiter: %q", line)
	}
	if got := b.do("l", "m1", "1"); got != "timeout" {
		t.Fatalf("timed wait: %q", got)
	}
	m = s.scrape(t)
	for name, want := range map[string]float64{
		"dflockd_grants_total": 3, "dflockd_releases_total": 1, "dflockd_timeouts_total": 1,
		"dflockd_lock_waiters": 0, "dflockd_locks_held": 1,
	} {
		if got := value(m, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	// Waits: three grants and the 1 s timed-out wait (the try-lock never
	// waited); holds: the one released.
	if w := m["dflockd_lock_wait_seconds"]; w == nil || len(w.Metric) != 1 ||
		w.Metric[0].Histogram.GetSampleCount() != 4 || w.Metric[0].Histogram.GetSampleSum() < 1 {
		t.Errorf("dflockd_lock_wait_seconds: %v", w)
	} else if b := w.Metric[0].Histogram.Bucket; bucket(b, 0.5) > 3 || bucket(b, 2.5) != 4 {
		t.Errorf("dflockd_lock_wait_seconds buckets: %v (the timed-out wait is in (0.5, 2.5])", b)
	}
	if h := m["dflockd_lock_hold_seconds"]; h == nil || len(h.Metric) != 1 || h.Metric[0].Histogram.GetSampleCount() != 1 {
		t.Errorf("dflockd_lock_hold_seconds: %v", h)
	}
	if got := value(m, "dflockd_fence_last"); got < 3 {
		t.Errorf("dflockd_fence_last = %v after 3 grants", got)
	}
	// The halves give the clock-seeded fence to the last digit (issue #23).
	want := s.srv.Engine().LastFence()
	if got := uint64(value(m, "dflockd_fence_last_high"))<<32 | uint64(value(m, "dflockd_fence_last_low")); got != want {
		t.Errorf("dflockd_fence_last_high and _low give %d, want the last fence %d", got, want)
	}
	if want < 1<<53 {
		t.Errorf("last fence %d: the test wants one seeded from the clock, past float64's 53 bits", want)
	}
}

// bucket is the cumulative count of the bucket of upper bound le; -1 if none.
func bucket(bs []*dto.Bucket, le float64) int {
	for _, b := range bs {
		if b.GetUpperBound() == le {
			return int(b.GetCumulativeCount())
		}
	}
	return -1
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
