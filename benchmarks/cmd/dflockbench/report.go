package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/dflockd-ng/dflockd/benchmarks/loadgen"
	"github.com/dflockd-ng/dflockd/benchmarks/procstat"
)

// serverProbe samples a server process at the edges of the measured
// window. start and end run on loadgen's goroutine, usage on the caller's
// after Run returned; the mutex orders them for the race detector.
type serverProbe struct {
	pid int

	mu          sync.Mutex
	before, aft procstat.Sample
	n           int // samples taken: 2 when the window completed
	err         error
}

func (p *serverProbe) start() { p.sample(&p.before) }
func (p *serverProbe) end()   { p.sample(&p.aft) }

func (p *serverProbe) sample(dst *procstat.Sample) {
	s, err := procstat.Take(p.pid)
	p.mu.Lock()
	defer p.mu.Unlock()
	*dst = s
	p.n++
	if err != nil && p.err == nil {
		p.err = err
	}
}

// usage returns what the server consumed in the window; nil when there is
// no probe.
func (p *serverProbe) usage() (*serverUsage, error) {
	if p == nil {
		return nil, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return nil, p.err
	}
	if p.n != 2 {
		return nil, fmt.Errorf("pid %d: %d of 2 window samples taken", p.pid, p.n)
	}
	u := p.aft.Since(p.before)
	return &serverUsage{PID: p.pid, Usage: u}, nil
}

// serverUsage is a server's resource use in one measured window.
type serverUsage struct {
	PID int
	procstat.Usage
}

// reporter prints results as text lines or JSON objects.
type reporter struct {
	w    io.Writer
	json bool
}

func newReporter(w io.Writer, jsonOut bool) *reporter { return &reporter{w: w, json: jsonOut} }

func (r *reporter) header(o *options, targets []*target) {
	if r.json {
		return
	}
	var names []string
	for _, t := range targets {
		n := t.name + "=" + t.addr
		if t.tls != nil {
			n += " tls"
		}
		if t.pid > 0 {
			n += fmt.Sprintf(" (pid %d)", t.pid)
		}
		names = append(names, n)
	}
	fmt.Fprintf(r.w, "# dflockbench: %s; warmup %v, window %v; targets: %s\n",
		env(), o.warmup, o.duration, strings.Join(names, ", "))
}

func (r *reporter) skip(name string, proto loadgen.Protocol, w loadgen.Workload, conns, depth int, why string) {
	if r.json {
		_ = json.NewEncoder(r.w).Encode(map[string]any{
			"target": name, "workload": w, "conns": conns, "depth": depth, "skipped": why,
		})
		return
	}
	fmt.Fprintf(r.w, "%-10s %-7s %-5s c=%-4d d=%-3d skipped: %s\n", name, proto, w, conns, depth, why)
}

// jsonRecord is one run in --json output. Durations are nanoseconds.
type jsonRecord struct {
	*loadgen.Result
	Server *jsonServer `json:"server,omitempty"`
}

type jsonServer struct {
	PID          int     `json:"pid"`
	CPUNs        int64   `json:"cpu_ns"`
	Cores        float64 `json:"cores"`
	CPUPerReqNs  int64   `json:"cpu_per_request_ns"`
	CPUPerPairNs int64   `json:"cpu_per_pair_ns"`
	RSSBytes     int64   `json:"rss_bytes"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
}

func (r *reporter) result(res *loadgen.Result, u *serverUsage) {
	if r.json {
		rec := jsonRecord{Result: res}
		if u != nil {
			rec.Server = &jsonServer{
				PID: u.PID, CPUNs: int64(u.CPU), Cores: u.Cores,
				CPUPerReqNs:  int64(u.PerOp(res.Requests)),
				CPUPerPairNs: int64(u.PerOp(res.Pairs)),
				RSSBytes:     u.RSS, PeakRSSBytes: u.PeakRSS,
			}
		}
		_ = json.NewEncoder(r.w).Encode(rec)
		return
	}
	line := res.String()
	if u != nil {
		line += fmt.Sprintf("  server: cpu/req=%v cpu/pair=%v cores=%.2f rss=%s peak=%s",
			u.PerOp(res.Requests).Round(10*time.Nanosecond), u.PerOp(res.Pairs).Round(10*time.Nanosecond),
			u.Cores, mib(u.RSS), mib(u.PeakRSS))
	}
	fmt.Fprintln(r.w, line)
}

func mib(b int64) string { return fmt.Sprintf("%.1fMiB", float64(b)/(1<<20)) }
