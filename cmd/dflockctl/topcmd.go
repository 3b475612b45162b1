package main

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"
)

// "dflockctl top": the lock observatory as a live full-screen view, in the
// manner of top and nats-top. Each refresh reads three routes of the
// server's HTTP API: GET /v1/hotkeys (hot keys and the wait and hold
// histograms), GET /v1/keys (holders and queues, for the longest current
// waits) and GET /v1/deadlocks. The screen is plain ANSI (an alternate
// screen, redrawn in place) on a terminal in raw mode, so that q quits
// without Enter; golang.org/x/term restores the terminal on the way out.

const topUsage = `usage: dflockctl top [--interval S] [--http HOST:PORT,...] [--json]

A live full-screen view of the server's locks: the hottest keys (by
grants and by total wait), the longest current waits, the wait and hold
histograms and the deadlocks, refreshed every --interval seconds. q (or
Ctrl-C) quits. With --json, or when stdout is not a terminal, prints one
snapshot (JSON, or the screen as text) and exits. Reads the server's
HTTP API (--http-port); hot keys need its --observatory-events.`

// topRows bounds each list of a snapshot.
const topRows = 10

// topKey is one hot key of /v1/hotkeys, named with its kind (a lock and
// a semaphore of one name are two rows).
type topKey struct {
	Key   string `json:"key"`
	Kind  string `json:"kind"`
	Count uint64 `json:"count"`
	Error uint64 `json:"error"`
}

// topHistogram is one histogram of /v1/hotkeys.
type topHistogram struct {
	Counts []uint64 `json:"counts"`
	Count  uint64   `json:"count"`
	SumMs  uint64   `json:"sum_ms"`
}

// topWait is one waiter of /v1/keys, with the key it waits for.
type topWait struct {
	Key      string `json:"key"`
	Kind     string `json:"kind"`
	Client   string `json:"client"`
	Identity string `json:"identity,omitempty"` // with a policy: who it authenticated as
	WaitedMs int64  `json:"waited_ms"`
}

// topSnapshot is what one refresh shows (and --json prints).
type topSnapshot struct {
	Server  string `json:"server"`
	Events  bool   `json:"events"`
	Held    int    `json:"keys_held"`
	Waiting int    `json:"waiters"`
	Hot     struct {
		ByGrants []topKey `json:"by_grants"`
		ByWait   []topKey `json:"by_wait"`
	} `json:"hot"`
	LongestWaits []topWait `json:"longest_waits"`
	Latency      struct {
		BoundsMs []int64      `json:"bounds_ms"`
		Wait     topHistogram `json:"wait"`
		Hold     topHistogram `json:"hold"`
	} `json:"latency"`
	Deadlocks []obsDeadlock `json:"deadlocks"`
	// Identities: a client of /v1/keys carries a policy identity, so the
	// waits show an IDENTITY column (in every refresh of a server with a
	// policy, not only in those where someone waits).
	Identities bool `json:"-"`
}

// top is "dflockctl top".
func (c *cli) top(g *globals, args []string) int {
	interval := 1.0
	if _, code, ok := c.parseCommand("top", topUsage, g, args, 0, 0, func(fs *flag.FlagSet) {
		fs.Float64Var(&interval, "interval", interval, "seconds between refreshes")
	}); !ok {
		return code
	}
	if interval < 0.1 || interval > 3600 {
		return c.fail(exitUsage, "top: --interval must be 0.1..3600 seconds")
	}
	ob, code := c.observatory("top", g)
	if ob == nil {
		return code
	}
	out, outTTY := c.stdout.(*os.File)
	in, inTTY := c.stdin.(*os.File)
	if g.json || !outTTY || !inTTY || !term.IsTerminal(int(out.Fd())) || !term.IsTerminal(int(in.Fd())) {
		snap, err := ob.snapshot()
		if err != nil {
			return c.fail(exitUnavailable, "top: %v", err)
		}
		if g.json {
			c.emit(g, "", snap)
		} else {
			fmt.Fprint(c.stdout, strings.Join(snap.render(100, 0, time.Now()), "\n")+"\n")
		}
		return exitOK
	}
	return c.topLive(ob, in, out, time.Duration(interval*float64(time.Second)))
}

// topLive runs the full-screen view until q, Ctrl-C or Ctrl-D.
func (c *cli) topLive(ob *observatory, in, out *os.File, every time.Duration) int {
	old, err := term.MakeRaw(int(in.Fd()))
	if err != nil {
		return c.fail(exitFailure, "top: the terminal: %v", err)
	}
	defer term.Restore(int(in.Fd()), old)
	fmt.Fprint(out, "\x1b[?1049h\x1b[?25l") // alternate screen, no cursor
	defer fmt.Fprint(out, "\x1b[?25h\x1b[?1049l")

	keys := make(chan byte)
	go func() { // ends with the process: a read of the terminal cannot be interrupted
		b := make([]byte, 1)
		for {
			n, err := in.Read(b)
			if err != nil || n == 0 {
				close(keys)
				return
			}
			keys <- b[0]
		}
	}()
	type result struct {
		snap *topSnapshot
		err  error
	}
	done := make(chan struct{})
	defer close(done)
	snaps := make(chan result)
	go func() {
		for {
			s, err := ob.snapshot()
			select {
			case snaps <- result{s, err}:
			case <-done:
				return
			}
			select {
			case <-time.After(every):
			case <-done:
				return
			}
		}
	}()
	var last *topSnapshot
	var lastErr error
	draw := func() {
		w, h, err := term.GetSize(int(out.Fd()))
		if err != nil || w < 20 || h < 5 {
			w, h = 80, 24
		}
		var lines []string
		if last != nil {
			lines = last.render(w, h-1, time.Now())
		} else {
			lines = []string{"dflockctl top: reading " + ob.addrs[0] + " …"}
		}
		status := "q quits"
		if lastErr != nil {
			status = "error: " + lastErr.Error() + " (retrying) · q quits"
		}
		lines = append(lines, status)
		var b strings.Builder
		b.WriteString("\x1b[H")
		for i, l := range lines {
			if i > 0 {
				b.WriteString("\r\n")
			}
			b.WriteString(clip(l, w))
			b.WriteString("\x1b[K")
		}
		b.WriteString("\x1b[J")
		io.WriteString(out, b.String())
	}
	draw()
	for {
		select {
		case k, ok := <-keys:
			if !ok || k == 'q' || k == 'Q' || k == 3 || k == 4 { // EOF, q, Ctrl-C, Ctrl-D
				return exitOK
			}
		case r := <-snaps:
			if r.err != nil {
				lastErr = r.err
			} else {
				last, lastErr = r.snap, nil
			}
			draw()
		}
	}
}

// clip cuts s to w columns (runes: the view prints no wide characters
// of its own; a key's may overflow, and the terminal wraps it).
func clip(s string, w int) string {
	if r := []rune(s); len(r) > w {
		return string(r[:w])
	}
	return s
}

// snapshot reads what one refresh shows.
func (ob *observatory) snapshot() (*topSnapshot, error) {
	s := &topSnapshot{Server: ob.addrs[0]}
	get := func(path string, v any) error {
		a, err := ob.do(http.MethodGet, path, nil)
		if err != nil {
			return err
		}
		if a.status != http.StatusOK {
			why := a.Error
			if why == "" {
				why = strings.TrimSpace(string(a.raw))
			}
			if a.status == http.StatusUnauthorized {
				why = "the server rejected the auth token"
			}
			return fmt.Errorf("GET %s: %d %s", path, a.status, why)
		}
		return json.Unmarshal(a.raw, v)
	}
	var hot struct {
		Events   bool     `json:"events"`
		ByGrants []topKey `json:"by_grants"`
		ByWait   []topKey `json:"by_wait"`
		Latency  struct {
			BoundsMs []int64      `json:"bounds_ms"`
			Wait     topHistogram `json:"wait"`
			Hold     topHistogram `json:"hold"`
		} `json:"latency"`
	}
	if err := get("/v1/hotkeys?limit="+strconv.Itoa(topRows), &hot); err != nil {
		return nil, err
	}
	s.Events, s.Hot.ByGrants, s.Hot.ByWait = hot.Events, hot.ByGrants, hot.ByWait
	s.Latency.BoundsMs, s.Latency.Wait, s.Latency.Hold = hot.Latency.BoundsMs, hot.Latency.Wait, hot.Latency.Hold
	var page struct {
		Keys []obsKey `json:"keys"`
	}
	if err := get("/v1/keys?kind=lock,semaphore,rwlock&limit=1000", &page); err != nil {
		return nil, err
	}
	s.Identities = identified(page.Keys)
	for _, k := range page.Keys {
		if len(k.Holders) > 0 {
			s.Held++
		}
		s.Waiting += k.WaitersTotal
		for _, w := range k.Waiters {
			if w.WaitedMs != nil {
				s.LongestWaits = append(s.LongestWaits, topWait{Key: k.Key, Kind: k.Kind, Client: w.Client.String(), Identity: w.Client.Identity, WaitedMs: *w.WaitedMs})
			}
		}
	}
	slices.SortStableFunc(s.LongestWaits, func(a, b topWait) int { return cmp.Compare(b.WaitedMs, a.WaitedMs) })
	s.LongestWaits = s.LongestWaits[:min(len(s.LongestWaits), topRows)]
	var dl struct {
		Deadlocks []obsDeadlock `json:"deadlocks"`
	}
	if err := get("/v1/deadlocks", &dl); err != nil {
		return nil, err
	}
	s.Deadlocks = dl.Deadlocks
	if s.Hot.ByGrants == nil {
		s.Hot.ByGrants = []topKey{}
	}
	if s.Hot.ByWait == nil {
		s.Hot.ByWait = []topKey{}
	}
	if s.LongestWaits == nil {
		s.LongestWaits = []topWait{}
	}
	if s.Deadlocks == nil {
		s.Deadlocks = []obsDeadlock{}
	}
	return s, nil
}

func fmtMs(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).Round(time.Millisecond).String()
}

// render lays the snapshot out in lines of at most w columns (clipped by
// the caller), at most h of them (0: no bound).
func (s *topSnapshot) render(w, h int, now time.Time) []string {
	lines := []string{
		fmt.Sprintf("dflockctl top — %s — %s — %d keys held, %d waiting, %d deadlocks",
			s.Server, now.Format(time.TimeOnly), s.Held, s.Waiting, len(s.Deadlocks)),
		fmt.Sprintf("wait: %s   hold: %s", histLine(s.Latency.Wait), histLine(s.Latency.Hold)),
		"",
	}
	for _, d := range s.Deadlocks {
		var keys []string
		for _, wt := range d.Waits {
			keys = append(keys, strconv.Quote(wt.Key))
		}
		var ids []string // the sessions' identities, each once
		for _, c := range d.Sessions {
			if c.Identity != "" && !slices.Contains(ids, c.Identity) {
				ids = append(ids, c.Identity)
			}
		}
		who := ""
		if len(ids) > 0 {
			who = " (" + strings.Join(ids, ", ") + ")"
		}
		lines = append(lines, fmt.Sprintf("DEADLOCK since %s: %d sessions%s on %s", d.Since.Local().Format(time.TimeOnly), len(d.Sessions), who, strings.Join(keys, ", ")))
	}
	if len(s.Deadlocks) > 0 {
		lines = append(lines, "")
	}
	// Hot keys side by side when there is room, else one under the other.
	left := []string{fmt.Sprintf("%-18s %-9s %10s", "MOST GRANTED", "KIND", "GRANTS")}
	for _, k := range s.Hot.ByGrants {
		left = append(left, fmt.Sprintf("%-18s %-9s %10s", clip(k.Key, 18), k.Kind, bound(strconv.FormatUint(k.Count, 10), k.Error)))
	}
	right := []string{fmt.Sprintf("%-18s %-9s %12s", "MOST WAITED FOR", "KIND", "TOTAL WAIT")}
	for _, k := range s.Hot.ByWait {
		right = append(right, fmt.Sprintf("%-18s %-9s %12s", clip(k.Key, 18), k.Kind, bound(fmtMs(int64(k.Count)), k.Error)))
	}
	if !s.Events {
		left = append(left, "(hot keys need the server's --observatory-events)")
	}
	if w >= 84 {
		for i := range max(len(left), len(right)) {
			l, r := "", ""
			if i < len(left) {
				l = left[i]
			}
			if i < len(right) {
				r = right[i]
			}
			lines = append(lines, fmt.Sprintf("%-42s %s", l, r))
		}
	} else {
		lines = append(append(append(lines, left...), ""), right...)
	}
	if s.Identities { // 96 columns: within the 100 of a snapshot off a terminal
		lines = append(lines, "", fmt.Sprintf("%-28s %-10s %-28s %-16s %10s", "LONGEST WAITS", "KIND", "WAITER", "IDENTITY", "WAITED"))
		for _, wt := range s.LongestWaits {
			lines = append(lines, fmt.Sprintf("%-28s %-10s %-28s %-16s %10s", clip(wt.Key, 28), wt.Kind, clip(wt.Client, 28), clip(cmp.Or(wt.Identity, "-"), 16), fmtMs(wt.WaitedMs)))
		}
	} else {
		lines = append(lines, "", fmt.Sprintf("%-28s %-10s %-28s %10s", "LONGEST WAITS", "KIND", "WAITER", "WAITED"))
		for _, wt := range s.LongestWaits {
			lines = append(lines, fmt.Sprintf("%-28s %-10s %-28s %10s", clip(wt.Key, 28), wt.Kind, clip(wt.Client, 28), fmtMs(wt.WaitedMs)))
		}
	}
	if len(s.LongestWaits) == 0 {
		lines = append(lines, "(nobody waits)")
	}
	if h > 0 && len(lines) > h {
		lines = lines[:h]
	}
	return lines
}

// bound is a sketch count with its possible overestimate.
func bound(v string, err uint64) string {
	if err == 0 {
		return v
	}
	return "≤" + v
}

// histLine sums a histogram up: count and mean.
func histLine(h topHistogram) string {
	if h.Count == 0 {
		return "none yet"
	}
	return fmt.Sprintf("%d, mean %s", h.Count, fmtMs(int64(h.SumMs/h.Count)))
}
