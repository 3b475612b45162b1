package main

// Starting the servers under test: dflockd-ng (built here or prebuilt),
// the reference servers and a throw-away Redis, each pinned to the server
// CPUs.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/dflockd-ng/dflockd/benchmarks/loadgen"
)

// startTargets builds and starts every server and lists the targets in
// column order.
func (s *runner) startTargets(ctx context.Context) error {
	// dflockd-ng
	bin, err := s.dflockdBinary(ctx)
	if err != nil {
		return err
	}
	s.ngBin = bin
	if s.scaling {
		return nil // it starts servers of its own
	}
	ng, err := s.startNG(ctx, bin)
	if err != nil {
		return err
	}
	s.targets = append(s.targets, &target{name: "ng", addr: ng.addr, kind: "line", pid: ng.pid, hot: true, prim: true})
	if !s.core() && len(s.prims) == 0 {
		return nil // fan-out only: it starts its own server
	}
	if err := s.startCoreRefs(ctx); err != nil {
		return err
	}
	if !s.noRedis {
		r, err := s.startRedis(ctx)
		if err != nil {
			return fmt.Errorf("redis: %w (--no-redis skips it)", err)
		}
		s.targets = append(s.targets, &target{name: "redis", addr: r.addr, kind: "redis", release: loadgen.ReleaseCAS, pid: r.pid, prim: true})
		if s.core() {
			s.targets = append(s.targets, &target{name: "redis-del", addr: r.addr, kind: "redis", release: loadgen.ReleaseDel, pid: r.pid})
			s.notes = append(s.notes, "`redis` = `SET key val NX PX ttl` + compare-and-delete script (`EVAL`), the safe release; `redis-del` = same acquire + plain `DEL`. Both against one redis-server (persistence off); every run uses keys of its own.")
		}
		s.primNote = append(s.primNote, fmt.Sprintf("`redis` = redis-server %s (persistence off), pinned like `ng`: `INCR key`; `SET key value` then `GET key`; `RPUSH key value` then `LPOP key`.", redisVersion(s.redisPath)))
	}
	if s.core() && !s.noEtcd {
		t, err := s.startEtcd(ctx)
		if err != nil {
			s.notes = append(s.notes, "etcd: unavailable: "+err.Error())
			fmt.Fprintf(s.stderr, "dflocksuite: etcd unavailable: %v\n", err)
		} else {
			s.targets = append(s.targets, t)
		}
	}
	for _, e := range s.extra {
		if err := probeTarget(e.addr); err != nil {
			return fmt.Errorf("target %s (%s): %w", e.name, e.addr, err)
		}
		s.targets = append(s.targets, &target{name: e.name, addr: e.addr, kind: "line", pid: e.pid, hot: true})
	}
	s.notes = append(s.notes,
		fmt.Sprintf("`ng` = dflockd-ng built from this tree, `--loops %d --max-locks %d`; `ceiling` = gnet server with dflockd framing and fixed replies (%d loop), the upper bound; `baseline` = dflockd's architecture (goroutine per connection, one mutex).", s.ngLoops, s.ngMaxLocks, s.ngLoops))
	s.primNote = append([]string{fmt.Sprintf("`ng` = dflockd-ng built from this tree, default (`v2`) profile, `--loops %d` (and, as for the locks, `--max-locks %d --read-timeout 600`): `incr key 1`; `kset key value` then `kget key _`; `rpush key value` then `lpop key _`.", s.ngLoops, s.ngMaxLocks)}, s.primNote...)
	s.primNote = append(s.primNote, "Every slot (request in flight) cycles through 8 keys of its own, fresh for every run on both servers (conns × depth × 8 keys: 6,400 at 50 × 16); values are 32 bytes, new every cycle. Every reply is checked: incr/INCR the key's previous value + 1, kget/GET and lpop/LPOP the value just written, rpush/RPUSH length 1; a wrong one fails the suite.")
	return nil
}

// startCoreRefs starts the servers only the lock workloads use.
func (s *runner) startCoreRefs(ctx context.Context) error {
	if !s.core() {
		return nil
	}
	c, err := s.startRef(ctx, "ceiling")
	if err != nil {
		return err
	}
	s.targets = append(s.targets, &target{name: "ceiling", addr: c.addr, kind: "line", pid: c.pid, hot: true})
	b, err := s.startRef(ctx, "baseline")
	if err != nil {
		return err
	}
	s.targets = append(s.targets, &target{name: "baseline", addr: b.addr, kind: "line", pid: b.pid, hot: true})
	return nil
}

func (s *runner) startNG(ctx context.Context, bin string, extra ...string) (*proc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := strings.Cut(addr, ":")
	args := append(s.ngArgs(port), extra...)
	return s.startProc(ctx, "dflockd-ng", bin, args, addr, probeLine)
}

func (s *runner) startRef(ctx context.Context, kind string) (*proc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	return s.startProc(ctx, kind, exe, []string{"serve", kind, "--addr", addr,
		"--loops", fmt.Sprint(s.ngLoops), "--max-locks", fmt.Sprint(s.ngMaxLocks)}, addr, probeLine)
}

// dflockdBinary is --dflockd-bin, or ./cmd/dflockd built into the
// temporary directory.
func (s *runner) dflockdBinary(ctx context.Context) (string, error) {
	if s.dflockdBin != "" {
		bin, err := filepath.Abs(s.dflockdBin)
		if err == nil {
			_, err = os.Stat(bin)
		}
		if err != nil {
			return "", fmt.Errorf("--dflockd-bin: %w", err)
		}
		fmt.Fprintf(s.stderr, "dflocksuite: dflockd-ng from %s\n", bin)
		return bin, nil
	}
	bin := filepath.Join(s.tmp, "dflockd")
	fmt.Fprintf(s.stderr, "dflocksuite: building ./cmd/dflockd …\n")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/dflockd")
	build.Dir = s.repo
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/dflockd: %v\n%s", err, out)
	}
	return bin, nil
}

// startRedis starts a throw-away redis-server, persistence off; extra
// arguments (io-threads) come last.
func (s *runner) startRedis(ctx context.Context, extra ...string) (*proc, error) {
	bin, err := s.redisBinary(ctx)
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := strings.Cut(addr, ":")
	args := append([]string{"--bind", "127.0.0.1", "--port", port,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning",
		"--maxclients", "20000", "--protected-mode", "no"}, extra...)
	return s.startProc(ctx, "redis-server", bin, args, addr, probeRedis)
}

// redisBinary is --redis-bin, or redis-server from PATH (installed when
// allowed and missing); it sets s.redisPath.
func (s *runner) redisBinary(ctx context.Context) (string, error) {
	if s.redisPath != "" {
		return s.redisPath, nil
	}
	if s.redisBin != "" {
		bin, err := filepath.Abs(s.redisBin)
		if err == nil {
			_, err = os.Stat(bin)
		}
		if err != nil {
			return "", fmt.Errorf("--redis-bin: %w", err)
		}
		s.redisPath = bin
		return bin, nil
	}
	bin, err := s.ensureBinary(ctx, "redis-server", "redis-server")
	if err != nil {
		return "", err
	}
	s.redisPath = bin
	return bin, nil
}

// redisVersion is the version of redis-server bin ("v=7.0.15" in its
// --version line), or "?".
func redisVersion(bin string) string {
	if bin == "" {
		return "?"
	}
	out, err := execOutput(bin, "--version")
	if err != nil {
		return "?"
	}
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return "?"
}
