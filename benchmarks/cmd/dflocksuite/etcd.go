package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/dflockd-ng/dflockd/benchmarks/loadgen"
	"github.com/dflockd-ng/dflockd/benchmarks/suite"
)

// startEtcd starts a single-member etcd (Debian package etcd-server) on
// loopback with a throw-away data directory on tmpfs when there is one.
func (s *runner) startEtcd(ctx context.Context) (*target, error) {
	bin, err := s.ensureBinary(ctx, "etcd", "etcd-server")
	if err != nil {
		return nil, err
	}
	base := s.tmp
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm"
	}
	dir, err := os.MkdirTemp(base, "dflocksuite-etcd-")
	if err != nil {
		return nil, err
	}
	s.cleanups = append(s.cleanups, func() { os.RemoveAll(dir) })
	client, err := freeAddr()
	if err != nil {
		return nil, err
	}
	peer, err := freeAddr()
	if err != nil {
		return nil, err
	}
	p, err := s.startProc(ctx, "etcd", bin, []string{
		"--name", "suite", "--data-dir", dir,
		"--listen-client-urls", "http://" + client, "--advertise-client-urls", "http://" + client,
		"--listen-peer-urls", "http://" + peer, "--initial-advertise-peer-urls", "http://" + peer,
		"--initial-cluster", "suite=http://" + peer, "--initial-cluster-state", "new",
		"--logger", "zap", "--log-level", "error",
	}, client, probeEtcd)
	if err != nil {
		return nil, err
	}
	ver := "?"
	if out, err := execOutput(bin, "--version"); err == nil {
		ver = strings.TrimPrefix(strings.SplitN(out, "\n", 2)[0], "etcd Version: ")
	}
	where := "tmpfs (/dev/shm), so its fsyncs are cheap: etcd's best case"
	if base != "/dev/shm" {
		where = "disk (" + base + ")"
	}
	s.notes = append(s.notes, fmt.Sprintf("`etcd` = etcd %s, single member, data dir on %s; per pair `concurrency.NewMutex(session, key).Lock` + `Unlock` (go.etcd.io/etcd/client/v3), one client and session per connection, a key per connection; depth 1 only (the client API blocks).", ver, where))
	return &target{name: "etcd", addr: p.addr, kind: "etcd", pid: p.pid}, nil
}

func probeEtcd(addr string) error {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/health")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"health":"true"`) {
		return fmt.Errorf("/health: %s %s", resp.Status, b)
	}
	return nil
}

// runEtcd is the lock workload against etcd: every "connection" is a
// client with its own session looping Lock+Unlock on its own key.
func (s *runner) runEtcd(ctx context.Context, j job) (suite.Record, error) {
	rec := suite.Record{Target: j.t.name, Workload: string(j.workload), Conns: j.conns, Depth: j.depth, Rep: j.rep}
	if j.workload != loadgen.Lock || j.depth != 1 {
		return rec, errors.New("etcd runs the lock workload at depth 1 only")
	}
	ctx, cancel := context.WithTimeout(ctx, s.warmup+s.duration+2*time.Minute)
	defer cancel()
	type worker struct {
		cli   *clientv3.Client
		sess  *concurrency.Session
		mu    *concurrency.Mutex
		hist  loadgen.Histogram
		pairs uint64
		reqs  uint64
		err   error
	}
	ws := make([]*worker, j.conns)
	defer func() {
		var wg sync.WaitGroup
		for _, w := range ws {
			if w == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if w.sess != nil {
					_ = w.sess.Close()
				}
				_ = w.cli.Close()
			}()
		}
		wg.Wait()
	}()
	runID := fmt.Sprintf("/suite/%d", time.Now().UnixNano())
	for i := range ws {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + j.t.addr}, DialTimeout: 5 * time.Second,
			Logger: nopLogger()})
		if err != nil {
			return rec, fmt.Errorf("client %d: %w", i, err)
		}
		w := &worker{cli: cli}
		ws[i] = w
		if w.sess, err = concurrency.NewSession(cli, concurrency.WithTTL(60), concurrency.WithContext(ctx)); err != nil {
			return rec, fmt.Errorf("session %d: %w", i, err)
		}
		w.mu = concurrency.NewMutex(w.sess, fmt.Sprintf("%s/c%d", runID, i))
	}
	var probe *windowProbe
	if j.t.pid > 0 {
		probe = &windowProbe{pid: j.t.pid}
	}
	base := time.Now()
	start, end := base.Add(s.warmup), base.Add(s.warmup+s.duration)
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				t0 := time.Now()
				if !t0.Before(end) || ctx.Err() != nil {
					return
				}
				opCtx, c := context.WithTimeout(ctx, 10*time.Second)
				err := w.mu.Lock(opCtx)
				t1 := time.Now()
				if err == nil {
					err = w.mu.Unlock(opCtx)
				}
				c()
				t2 := time.Now()
				if err != nil {
					w.err = err
					cancel()
					return
				}
				if !t0.Before(start) && t2.Before(end) {
					w.pairs++
					w.reqs += 2
					w.hist.Record(int64(t1.Sub(t0)))
					w.hist.Record(int64(t2.Sub(t1)))
				}
			}
		}()
	}
	if probe != nil {
		time.Sleep(time.Until(start))
		probe.take(&probe.a)
		time.Sleep(time.Until(end))
		probe.take(&probe.b)
	}
	wg.Wait()
	var h loadgen.Histogram
	var pairs, reqs uint64
	for i, w := range ws {
		if w.err != nil {
			return rec, fmt.Errorf("connection %d: Lock/Unlock: %w", i, w.err)
		}
		h.Merge(&w.hist)
		pairs += w.pairs
		reqs += w.reqs
	}
	if pairs == 0 {
		return rec, errors.New("no Lock+Unlock pair completed in the window")
	}
	secs := s.duration.Seconds()
	rec.PairsPerS, rec.ReqPerS = float64(pairs)/secs, float64(reqs)/secs
	rec.P50Ns, rec.P99Ns = int64(h.Quantile(0.5)), int64(h.Quantile(0.99))
	rec.P999Ns, rec.MaxNs = int64(h.Quantile(0.999)), int64(h.Max())
	if probe != nil {
		if u, ok, err := probe.usage(); err == nil && ok {
			rec.CPUPerPairNs = float64(u.PerOp(pairs))
			rec.Cores, rec.RSSBytes = u.Cores, u.RSS
		}
	}
	return rec, nil
}
