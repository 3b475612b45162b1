package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dflockd-ng/dflockd/parse"
)

// genFor returns the generator configuration of a command line.
func genFor(t *testing.T, args ...string) *genConfig {
	t.Helper()
	cfg, err := parseFlags(args, io.Discard)
	if err != nil {
		t.Fatalf("parseFlags(%q): %v", args, err)
	}
	return &cfg.gen
}

// frames returns n frames of generator i.
func frames(cfg *genConfig, i, n int) (out [][]string, kinds []frameKind) {
	g := newGenerator(cfg, 1, i)
	for range n {
		lines, kind := g.frame(nil)
		out, kinds = append(out, lines), append(kinds, kind)
	}
	return out, kinds
}

// keySpace is every key the generator may use with -keys and -chans.
func keySpace(cfg *genConfig) map[string]bool {
	ks := map[string]bool{}
	for i := range cfg.keys {
		ks["k"+strconv.Itoa(i)] = true
	}
	for i := range cfg.chans {
		for j := range cfg.chans {
			ks[fmt.Sprintf("ch.%d.%d", i, j)] = true
		}
	}
	for _, k := range slices.Concat(cfg.junkPool, invalidKeys) {
		ks[k] = true
	}
	return ks
}

// With no junk and no misalignment every frame is three lines that the
// server's own framer takes as one request, every command is sent, most are
// requests the server's parser accepts, and every key is in the bounded key
// space.
func TestFramesWellFormed(t *testing.T) {
	cfg := genFor(t, "-junk", "0", "-misalign", "0", "-keys", "50", "-chans", "4")
	keys := keySpace(cfg)
	patterns := map[string]bool{}
	for k := range keys {
		patterns[k] = true
	}
	for _, w := range wildcards {
		patterns[w] = true
	}
	for i := range cfg.chans {
		patterns[fmt.Sprintf("ch.%d.*", i)], patterns[fmt.Sprintf("ch.*.%d", i)] = true, true
	}
	sent, accepted := map[string]int{}, map[string]int{}
	used := map[string]bool{}
	all, kinds := frames(cfg, 0, 30000)
	for n, f := range all {
		if kinds[n] != validFrame || len(f) != 3 {
			t.Fatalf("frame %d: kind %d, lines %q", n, kinds[n], f)
		}
		wire := []byte(strings.Join(f, "\n") + "\n")
		pf, took, err := parse.Next(wire)
		if err != nil || took != len(wire) {
			t.Fatalf("frame %q: the server's framer takes %d of %d bytes, %v", f, took, len(wire), err)
		}
		cmd, key := f[0], f[1]
		sent[cmd]++
		if _, err := parse.Parse(pf); err == nil {
			accepted[cmd]++
		}
		switch cmd {
		case "listen", "unlisten", "watch", "unwatch":
			if !patterns[key] {
				t.Fatalf("frame %q: pattern outside the key space", f)
			}
			used[key] = true
		case "auth", "ping", "stats", "barrier":
			if key != "_" {
				t.Fatalf("frame %q: key-less command with a key", f)
			}
		case "stable-ref":
			if n, err := strconv.Atoi(strings.TrimPrefix(key, "ref")); err != nil || n < 0 || n >= 100 {
				t.Fatalf("frame %q: stable ref outside ref0..ref99", f)
			}
		default:
			if !keys[key] {
				t.Fatalf("frame %q: key outside the key space", f)
			}
			used[key] = true
		}
	}
	for _, c := range commands {
		if sent[c] == 0 || accepted[c] == 0 {
			t.Errorf("command %q: %d frames sent, %d of them valid requests", c, sent[c], accepted[c])
		}
	}
	if total := len(all); sum(accepted) < total*3/4 {
		t.Errorf("only %d of %d frames are valid requests", sum(accepted), total)
	}
	t.Logf("%d frames, %d valid requests, %d distinct keys and patterns of %d", len(all), sum(accepted), len(used), len(patterns))
}

func sum(m map[string]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}

// -junk and -misalign give junk frames (three lines) and stray lines (one or
// two) at about their rates, and no line ever holds a line feed.
func TestFramesJunkAndMisaligned(t *testing.T) {
	cfg := genFor(t, "-junk", "0.3", "-misalign", "0.1")
	const n = 30000
	all, kinds := frames(cfg, 3, n)
	count := map[frameKind]int{}
	for i, f := range all {
		count[kinds[i]]++
		if misaligned := kinds[i] == misalignedFrame; misaligned != (len(f) < 3) || len(f) < 1 || len(f) > 3 {
			t.Fatalf("frame of kind %d has %d lines: %q", kinds[i], len(f), f)
		}
		for _, l := range f {
			if strings.Contains(l, "\n") {
				t.Fatalf("line %q holds a line feed", l)
			}
		}
	}
	near := func(got int, p float64) bool { return abs(float64(got)/n-p) < 0.02 }
	if !near(count[misalignedFrame], 0.1) || !near(count[junkFrame], 0.9*0.3) {
		t.Errorf("of %d frames %d misaligned (want ~10%%), %d junk (want ~27%%)", n, count[misalignedFrame], count[junkFrame])
	}
}

func abs(x float64) float64 { return max(x, -x) }

// -skip removes commands from what is sent; unknown names are refused.
func TestSkip(t *testing.T) {
	cfg := genFor(t, "-skip", "stats, kset,blpop", "-junk", "0", "-misalign", "0")
	all, _ := frames(cfg, 0, 20000)
	seen := map[string]bool{}
	for _, f := range all {
		seen[f[0]] = true
	}
	for _, c := range commands {
		skipped := c == "stats" || c == "kset" || c == "blpop"
		if seen[c] == skipped {
			t.Errorf("command %q: sent %v, skipped %v", c, seen[c], skipped)
		}
	}
	if _, err := parseFlags([]string{"-skip", "stats,nosuch"}, io.Discard); err == nil {
		t.Error("-skip nosuch accepted")
	}
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"-server", "./dflockd", "-dur", "60s", "--", "--compat=rf"}, io.Discard)
	if err != nil || cfg.server != "./dflockd" || !slices.Equal(cfg.serverArgs, []string{"--compat=rf"}) {
		t.Errorf("-server ./dflockd -dur 60s -- --compat=rf: %+v, %v", cfg, err)
	}
	for _, args := range [][]string{
		{"--", "--compat=rf"},                  // server args without -server
		{"-server", "x", "-pid", "1"},          // -server picks the pid
		{"-junk", "1.5"},                       // not a probability
		{"-conns", "0"},                        // nothing to do
		{"-skip", strings.Join(commands, ",")}, // nothing left
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

// A short run against the real server, started by -server: traffic flows,
// the RSS is sampled in every phase, and the server is stopped at the end.
func TestRunAgainstServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go on PATH to build the server")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "dflockd")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/dflockd-ng/dflockd/cmd/dflockd").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cfg, err := parseFlags([]string{"-server", bin, "-conns", "4", "-dur", "2s", "-sample", "500ms", "-tail", "1s",
		"-out", dir, "--", "--compat=rf"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, serverLog bytes.Buffer
	res, err := run(cfg, &stdout, &serverLog)
	t.Logf("stdout:\n%s\nserver:\n%s", &stdout, &serverLog)
	if err != nil {
		t.Fatal(err)
	}
	tr := res.tr
	if tr.frames.Load() == 0 || tr.replies.Load() == 0 || tr.dials.Load() < 4 {
		t.Errorf("frames %d replies %d dials %d", tr.frames.Load(), tr.replies.Load(), tr.dials.Load())
	}
	if r := res.rss; r.start <= 0 || r.peakLoad < r.endLoad || r.endLoad <= 0 || r.idle <= 0 {
		t.Errorf("rss %+v", r)
	}
	t.Logf("stuck drops %d, server closes %d (counted, not fatal)", tr.stuck.Load(), tr.closes.Load())
	if !regexp.MustCompile(`(?m)^rss_kb start \d+ peak-load \d+ end-load \d+ idle \d+ `).Match(stdout.Bytes()) {
		t.Error("no rss_kb summary line")
	}
	csv, err := os.ReadFile(filepath.Join(dir, "samples.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"\nstart,", "\nload,", "\nidle,"} {
		if !bytes.Contains(csv, []byte(p)) {
			t.Errorf("samples.csv has no %q row:\n%s", p[1:], csv)
		}
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", res.serverPID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("server pid %d still there after the run: %v", res.serverPID, err)
	}
}
