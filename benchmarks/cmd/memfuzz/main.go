// Command memfuzz finds what holds a dflockd server's memory under random
// traffic from many connections. -conns connections send random frames of
// the line protocol (every command, valid and invalid arguments, keys from a
// bounded space, some junk and misaligned lines) for -dur; then every
// connection closes and the server sits idle for -tail. The server's RSS is
// sampled every -sample throughout. Since the key space is bounded, a peak
// that keeps rising under steady load, or an idle figure far above the
// start, is memory the server holds for no reason: a leak, an unbounded
// cache, state kept after its clients left.
//
// One command reproduces a figure: with -server, memfuzz starts that binary
// on a free loopback port (--host and --port, then the arguments after --),
// samples it and stops it at the end. From benchmarks/:
//
//	go build -o /tmp/dflockd ../cmd/dflockd
//	go run ./cmd/memfuzz -server /tmp/dflockd -dur 200s -tail 30s -- --compat=rf
//
// or, against a server already running: memfuzz -addr host:port -pid PID.
//
// It prints a row per sample (phase, seconds, frames, pushes, dials,
// rss_kb; -out DIR writes them to DIR/samples.csv too), then the RSS at the
// start, its peak and last value under load, and the last idle value, and
// the traffic counters. Error replies, connections the server closes and
// replies slower than -blockwait (a stuck drop: the connection is dropped
// and redialed) are only counted; the server exiting during the run, or
// failing to stop on SIGTERM, is an error (exit status 1).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

type config struct {
	addr       string
	server     string   // -server binary; "" = use addr and pid
	serverArgs []string // after --
	pid        int
	conns      int
	dur        time.Duration
	frames     int64
	rate       float64
	sample     time.Duration
	tail       time.Duration
	out        string
	seed       uint64
	blockWait  time.Duration
	churn      float64
	pipeline   int
	gen        genConfig
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	} else if err != nil {
		os.Exit(2)
	}
	if _, err := run(cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "memfuzz:", err)
		os.Exit(1)
	}
}

// parseFlags parses the command line; it reports errors to stderr itself.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("memfuzz", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: memfuzz [flags] [-- server args (with -server)]")
		fs.PrintDefaults()
	}
	fs.StringVar(&c.addr, "addr", "127.0.0.1:6388", "server address (not with -server)")
	fs.StringVar(&c.server, "server", "", "start the server binary at `path` on a free loopback port (args after --), sample it, stop it at the end")
	fs.IntVar(&c.pid, "pid", 0, "server pid whose RSS to sample (0 = counters only; not with -server)")
	fs.IntVar(&c.conns, "conns", 48, "connections")
	fs.DurationVar(&c.dur, "dur", 200*time.Second, "load duration")
	fs.Int64Var(&c.frames, "frames", 0, "end the load after this many frames (0 = only -dur)")
	fs.Float64Var(&c.rate, "rate", 0, "frames/s over all connections (0 = as fast as replies come)")
	fs.IntVar(&c.gen.keys, "keys", 2000, "plain key names k0..k<keys-1>")
	fs.IntVar(&c.gen.chans, "chans", 40, "dotted names ch.<i>.<j>, i, j < chans")
	fs.DurationVar(&c.sample, "sample", 5*time.Second, "sampling period")
	fs.DurationVar(&c.tail, "tail", 90*time.Second, "after the load, every connection closed: keep sampling this long")
	fs.StringVar(&c.out, "out", "", "`dir`ectory to write samples.csv to")
	fs.Uint64Var(&c.seed, "seed", 1, "random seed")
	fs.DurationVar(&c.blockWait, "blockwait", 3*time.Second, "reply deadline; past it the connection is dropped and redialed")
	fs.Float64Var(&c.churn, "churn", 0, "probability, before each write, of closing the connection and redialing")
	fs.Float64Var(&c.gen.junk, "junk", 0.08, "probability of a junk frame (random command word)")
	fs.Float64Var(&c.gen.misalign, "misalign", 0.003, "probability of 1-2 stray lines instead of a frame (shifts the framing)")
	fs.Float64Var(&c.gen.wild, "wild", 0.1, "probability that a listen/watch pattern is a wildcard")
	fs.IntVar(&c.pipeline, "pipeline", 1, "frames written before waiting for their replies")
	skip := fs.String("skip", "", "comma-separated commands never sent (e.g. stats)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	c.serverArgs = fs.Args()
	err := c.check(set, *skip)
	if err != nil {
		fmt.Fprintln(stderr, "memfuzz:", err)
	}
	return c, err
}

// check validates c and completes c.gen.
func (c *config) check(set map[string]bool, skip string) error {
	switch {
	case c.server == "" && len(c.serverArgs) > 0:
		return fmt.Errorf("arguments %q without -server", c.serverArgs)
	case c.server != "" && (set["addr"] || set["pid"]):
		return errors.New("-server picks the address and pid: no -addr or -pid with it")
	case c.conns < 1 || c.pipeline < 1 || c.gen.keys < 1 || c.gen.chans < 1:
		return errors.New("-conns, -pipeline, -keys and -chans must be at least 1")
	case c.dur <= 0 || c.sample <= 0 || c.blockWait <= 0 || c.tail < 0 || c.frames < 0 || c.rate < 0:
		return errors.New("-dur, -sample and -blockwait must be positive; -tail, -frames and -rate not negative")
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"churn", c.churn}, {"junk", c.gen.junk}, {"misalign", c.gen.misalign}, {"wild", c.gen.wild}} {
		if p.v < 0 || p.v > 1 {
			return fmt.Errorf("-%s %v is not a probability", p.name, p.v)
		}
	}
	if c.churn == 1 {
		return errors.New("-churn 1 would never write")
	}
	drop := map[string]bool{}
	for name := range strings.SplitSeq(skip, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		if !slices.Contains(commands, name) {
			return fmt.Errorf("-skip: no command %q", name)
		}
		drop[name] = true
	}
	c.gen.cmds = slices.DeleteFunc(slices.Clone(commands), func(s string) bool { return drop[s] })
	if len(c.gen.cmds) == 0 {
		return errors.New("-skip leaves no command to send")
	}
	c.gen.junkPool = makeJunkPool(c.seed)
	return nil
}

// result is what a run measured.
type result struct {
	tr        *traffic
	rss       rssSummary
	serverPID int
}

// run starts the server if asked, loads it, leaves it idle, and prints the
// samples and the summary to stdout. The server's output goes to stderr.
func run(cfg config, stdout, stderr io.Writer) (res result, err error) {
	addr, pid := cfg.addr, cfg.pid
	if cfg.server != "" {
		srv, serr := startServer(cfg.server, cfg.serverArgs, stderr)
		if serr != nil {
			return res, serr
		}
		defer func() { err = errors.Join(err, srv.stop()) }()
		addr, pid = srv.addr, srv.pid
	}
	res.serverPID = pid
	var csv io.Writer
	if cfg.out != "" {
		if err := os.MkdirAll(cfg.out, 0o755); err != nil {
			return res, err
		}
		f, ferr := os.Create(filepath.Join(cfg.out, "samples.csv"))
		if ferr != nil {
			return res, ferr
		}
		defer func() { err = errors.Join(err, f.Close()) }()
		csv = f
	}

	fmt.Fprintf(stdout, "memfuzz: %d connections to %s, server pid %d, seed %d\n", cfg.conns, addr, pid, cfg.seed)
	res.tr = newTraffic(cfg.frames)
	s := newSampler(stdout, csv, pid, res.tr)
	if err := s.row(phaseStart); err != nil {
		return res, err
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	start := time.Now()
	for i := range cfg.conns {
		w := &worker{cfg: &cfg, addr: addr, tr: res.tr, gen: newGenerator(&cfg.gen, cfg.seed, i), next: start}
		if cfg.rate > 0 {
			w.interval = time.Duration(float64(time.Second) * float64(cfg.conns*cfg.pipeline) / cfg.rate)
		}
		wg.Go(func() { w.run(ctx) })
	}
	err = s.phase(phaseLoad, cfg.sample, cfg.dur, res.tr.spent)
	load := time.Since(start)
	cancel()
	wg.Wait()
	if err == nil && cfg.tail > 0 {
		err = s.phase(phaseIdle, cfg.sample, cfg.tail, nil)
	}
	s.summary(stdout, load)
	res.rss = s.rss
	if err == nil && res.tr.dials.Load() == 0 {
		err = fmt.Errorf("no connection to %s succeeded", addr)
	}
	return res, err
}
