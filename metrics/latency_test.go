package metrics

import (
	"fmt"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// histogram is the dflockd_request_duration_seconds sample of command,
// nil if there is none.
func histogram(fams map[string]*dto.MetricFamily, command string) *dto.Histogram {
	f := fams["dflockd_request_duration_seconds"]
	if f == nil {
		return nil
	}
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if l.GetName() == "command" && l.GetValue() == command {
				return m.Histogram
			}
		}
	}
	return nil
}

// histCount is how many requests of command the histogram observed (0
// without a sample); it checks that the buckets add up to it.
func histCount(t *testing.T, fams map[string]*dto.MetricFamily, command string) uint64 {
	t.Helper()
	h := histogram(fams, command)
	if h == nil {
		return 0
	}
	prev := uint64(0)
	for _, b := range h.Bucket {
		if b.GetCumulativeCount() < prev {
			t.Fatalf("%s: buckets not cumulative: %v", command, h.Bucket)
		}
		prev = b.GetCumulativeCount()
	}
	if prev > h.GetSampleCount() {
		t.Fatalf("%s: the buckets hold %d, the count says %d", command, prev, h.GetSampleCount())
	}
	return h.GetSampleCount()
}

// The latency histograms count each request once it is answered, by
// command: a waiting lock only when it is granted.
func TestRequestDurationByCommand(t *testing.T) {
	s := startServer(t)
	a, b, c := dial(t, s.addr), dial(t, s.addr), dial(t, s.addr)
	tok := strings.Fields(a.do("l", "k", "0 30"))[1]
	for range 3 {
		if got := a.do("incr", "n", "1"); !strings.HasPrefix(got, "ok ") {
			t.Fatalf("incr: %q", got)
		}
	}
	if got := b.do("l", "k", "0"); got != "timeout" {
		t.Fatalf("try on a held lock: %q", got)
	}
	if _, err := fmt.Fprintf(c.c, "l\nk\n30\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return value(s.scrape(t), "dflockd_lock_waiters") == 1 })
	m := s.scrape(t)
	for cmd, want := range map[string]uint64{"l": 2, "incr": 3, "r": 0} {
		if got := histCount(t, m, cmd); got != want {
			t.Errorf("before the release: %s observed %d times, want %d", cmd, got, want)
		}
	}
	if got := a.do("r", "k", tok); got != "ok" {
		t.Fatalf("release: %q", got)
	}
	if line, _ := c.r.ReadString('\n'); !strings.HasPrefix(line, "ok ") {
		t.Fatalf("waiter: %q", line)
	}
	// Each reply was read before this scrape, and a request is observed
	// before its reply is written.
	m = s.scrape(t)
	for cmd, want := range map[string]uint64{"l": 3, "incr": 3, "r": 1} {
		if got := histCount(t, m, cmd); got != want {
			t.Errorf("after the release: %s observed %d times, want %d", cmd, got, want)
		}
	}
}
