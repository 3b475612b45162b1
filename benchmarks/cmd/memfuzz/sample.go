package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// Phases of a run, the first column of the table and of samples.csv.
const (
	phaseStart = "start" // before the first connection
	phaseLoad  = "load"
	phaseIdle  = "idle" // -tail: every connection closed
)

// rssSummary holds the figures of the summary line, in kB; 0 = not sampled.
type rssSummary struct {
	start, peakLoad, endLoad, idle int64
}

// sampler prints a row of counters and the server's RSS per sample.
type sampler struct {
	table io.Writer
	csv   io.Writer // nil without -out
	pid   int       // 0: counters only
	tr    *traffic
	t0    time.Time
	rss   rssSummary
}

func newSampler(table, csv io.Writer, pid int, tr *traffic) *sampler {
	s := &sampler{table: table, csv: csv, pid: pid, tr: tr, t0: time.Now()}
	fmt.Fprintf(table, "%-5s %7s %10s %8s %6s %8s\n", "phase", "t_s", "frames", "pushes", "dials", "rss_kb")
	if csv != nil {
		fmt.Fprintln(csv, "phase,t_s,frames,pushes,dials,rss_kb")
	}
	return s
}

// phase samples every period until length has passed or stop is closed,
// and once more at the end. It fails when the server's RSS cannot be read:
// the server is gone.
func (s *sampler) phase(name string, period, length time.Duration, stop <-chan struct{}) error {
	t0 := time.Now()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for at := period; ; at += period {
		at = min(at, length)
		timer.Reset(time.Until(t0.Add(at)))
		select {
		case <-timer.C:
		case <-stop:
			at = length
		}
		if err := s.row(name); err != nil || at == length {
			return err
		}
	}
}

// row prints one sample.
func (s *sampler) row(phase string) error {
	var rss int64
	var err error
	if s.pid > 0 {
		if rss, err = rssKB(s.pid); err == nil {
			switch phase {
			case phaseStart:
				s.rss.start = rss
			case phaseLoad:
				s.rss.peakLoad = max(s.rss.peakLoad, rss)
				s.rss.endLoad = rss
			case phaseIdle:
				s.rss.idle = rss
			}
		}
	}
	t := time.Since(s.t0).Seconds()
	f, p, d := s.tr.frames.Load(), s.tr.pushes.Load(), s.tr.dials.Load()
	fmt.Fprintf(s.table, "%-5s %7.1f %10d %8d %6d %8s\n", phase, t, f, p, d, kb(rss, "-"))
	if s.csv != nil {
		fmt.Fprintf(s.csv, "%s,%.1f,%d,%d,%d,%s\n", phase, t, f, p, d, kb(rss, ""))
	}
	return err
}

// summary prints the RSS figures and the traffic counters.
func (s *sampler) summary(w io.Writer, load time.Duration) {
	if s.pid > 0 {
		fmt.Fprintf(w, "rss_kb start %s peak-load %s end-load %s idle %s (idle = last sample of the -tail phase)\n",
			kb(s.rss.start, "-"), kb(s.rss.peakLoad, "-"), kb(s.rss.endLoad, "-"), kb(s.rss.idle, "-"))
	} else {
		fmt.Fprintln(w, "rss_kb not sampled (no -pid or -server)")
	}
	t := s.tr
	fmt.Fprintf(w, "frames %d replies %d pushes %d dials %d server-closes %d stuck-drops %d in %.1fs of load\n",
		t.frames.Load(), t.replies.Load(), t.pushes.Load(), t.dials.Load(), t.closes.Load(), t.stuck.Load(), load.Seconds())
}

// kb formats a figure in kB, or none when it was not sampled.
func kb(v int64, none string) string {
	if v <= 0 {
		return none
	}
	return strconv.FormatInt(v, 10)
}

// rssKB returns the resident set size of process pid in kB: VmRSS in
// /proc/<pid>/status, which an exited process no longer has.
func rssKB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("server RSS: %w", err)
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			f := strings.Fields(v) // "  8612 kB"
			if len(f) == 2 && f[1] == "kB" {
				return strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("server RSS: no VmRSS in /proc/%d/status: the process has exited", pid)
}
