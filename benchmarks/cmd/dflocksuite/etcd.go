package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
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
	base := s.tmp
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm"
	}
	t, ver, err := s.startEtcdCluster(ctx, "etcd", 1, base)
	if err != nil {
		return nil, err
	}
	where := "tmpfs (/dev/shm), so its fsyncs are cheap: etcd's best case"
	if base != "/dev/shm" {
		where = "disk (" + base + ")"
	}
	s.notes = append(s.notes, fmt.Sprintf("`etcd` = etcd %s, single member, data dir on %s; per pair `concurrency.NewMutex(session, key).Lock` + `Unlock` (go.etcd.io/etcd/client/v3), one client and session per connection, a key per connection; depth 1 only (the client API blocks).", ver, where))
	return t, nil
}

// startEtcdCluster starts an etcd cluster of n members on loopback, each
// with a throw-away data directory under base, pinned to the server CPUs,
// and waits until every member reports itself healthy (which needs a
// leader). The target's endpoints are every member's client URL and its
// CPU is the members' sum. ver is etcd's version.
func (s *runner) startEtcdCluster(ctx context.Context, name string, n int, base string) (t *target, ver string, err error) {
	bin, err := s.ensureBinary(ctx, "etcd", "etcd-server")
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp(base, "dflocksuite-"+name+"-")
	if err != nil {
		return nil, "", err
	}
	s.cleanups = append(s.cleanups, func() { os.RemoveAll(dir) })
	clients, peers := make([]string, n), make([]string, n)
	var initial []string
	for i := range n {
		if clients[i], err = freeAddr(); err != nil {
			return nil, "", err
		}
		if peers[i], err = freeAddr(); err != nil {
			return nil, "", err
		}
		initial = append(initial, fmt.Sprintf("%s-%d=http://%s", name, i+1, peers[i]))
	}
	t = &target{name: name, kind: "etcd"}
	var ps []*proc
	defer func() {
		if err != nil { // etcd is optional: leave nothing running to load the CPU
			for _, p := range ps {
				p.stop()
			}
		}
	}()
	for i := range n {
		member := fmt.Sprintf("%s-%d", name, i+1)
		p, serr := s.spawnProc(member, bin, []string{
			"--name", member, "--data-dir", filepath.Join(dir, member),
			"--listen-client-urls", "http://" + clients[i], "--advertise-client-urls", "http://" + clients[i],
			"--listen-peer-urls", "http://" + peers[i], "--initial-advertise-peer-urls", "http://" + peers[i],
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", filepath.Base(dir),
			"--logger", "zap", "--log-level", "error",
		}, clients[i])
		if serr != nil {
			return nil, "", serr
		}
		ps = append(ps, p)
		t.endpoints = append(t.endpoints, "http://"+clients[i])
		t.group = append(t.group, p.pid)
	}
	for _, p := range ps {
		if err = s.await(ctx, p, probeEtcd); err != nil {
			return nil, "", err
		}
	}
	t.addr, t.pid = ps[0].addr, ps[0].pid
	if n > 1 {
		t.pid = 0 // the group's CPU, not one member's
	} else {
		t.group = nil
	}
	ver = "?"
	if out, err := execOutput(bin, "--version"); err == nil {
		ver = strings.TrimPrefix(strings.SplitN(out, "\n", 2)[0], "etcd Version: ")
	}
	return t, ver, nil
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
// client (of every endpoint of the target) and carries depth lockers, each
// with its own session looping Lock+Unlock on its own key. The client API
// blocks in Lock, so depth is concurrency over one client's gRPC
// connection, not pipelining: the nearest thing etcd has.
func (s *runner) runEtcd(ctx context.Context, j job) (suite.Record, error) {
	rec := suite.Record{Target: j.t.name, Workload: string(j.workload), Conns: j.conns, Depth: j.depth, Rep: j.rep}
	if j.workload != loadgen.Lock {
		return rec, errors.New("etcd runs the lock workload only")
	}
	ctx, cancel := context.WithTimeout(ctx, s.warmup+s.duration+2*time.Minute)
	defer cancel()
	type locker struct {
		sess  *concurrency.Session
		mu    *concurrency.Mutex
		hist  loadgen.Histogram
		pairs uint64
		reqs  uint64
		err   error
	}
	endpoints := j.t.endpoints
	if len(endpoints) == 0 {
		endpoints = []string{"http://" + j.t.addr}
	}
	clis := make([]*clientv3.Client, j.conns)
	ls := make([]*locker, j.conns*j.depth)
	defer func() {
		var wg sync.WaitGroup
		for _, l := range ls {
			if l != nil && l.sess != nil {
				wg.Go(func() { _ = l.sess.Close() })
			}
		}
		wg.Wait()
		for _, c := range clis {
			if c != nil {
				_ = c.Close()
			}
		}
	}()
	runID := fmt.Sprintf("/suite/%d", time.Now().UnixNano())
	for i := range clis {
		cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second,
			Logger: nopLogger()})
		if err != nil {
			return rec, fmt.Errorf("client %d: %w", i, err)
		}
		clis[i] = cli
	}
	// Sessions (a lease grant each) are opened concurrently: conns × depth
	// of them one by one would take seconds on an fsync'd cluster.
	var wg sync.WaitGroup
	errs := make([]error, len(ls))
	for i := range ls {
		wg.Go(func() {
			conn, slot := i/j.depth, i%j.depth
			sess, err := concurrency.NewSession(clis[conn], concurrency.WithTTL(60), concurrency.WithContext(ctx))
			if err != nil {
				errs[i] = fmt.Errorf("session %d of client %d: %w", slot, conn, err)
				return
			}
			ls[i] = &locker{sess: sess, mu: concurrency.NewMutex(sess, fmt.Sprintf("%s/c%d/s%d", runID, conn, slot))}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return rec, err
	}
	var probe *windowProbe
	if pids := j.t.pids(); len(pids) > 0 {
		probe = &windowProbe{pids: pids}
	}
	base := time.Now()
	start, end := base.Add(s.warmup), base.Add(s.warmup+s.duration)
	for _, l := range ls {
		wg.Go(func() {
			for {
				t0 := time.Now()
				if !t0.Before(end) || ctx.Err() != nil {
					return
				}
				opCtx, c := context.WithTimeout(ctx, 10*time.Second)
				err := l.mu.Lock(opCtx)
				t1 := time.Now()
				if err == nil {
					err = l.mu.Unlock(opCtx)
				}
				c()
				t2 := time.Now()
				if err != nil {
					l.err = err
					cancel()
					return
				}
				if !t0.Before(start) && t2.Before(end) {
					l.pairs++
					l.reqs += 2
					l.hist.Record(int64(t1.Sub(t0)))
					l.hist.Record(int64(t2.Sub(t1)))
				}
			}
		})
	}
	if probe != nil {
		time.Sleep(time.Until(start))
		probe.take(&probe.a)
		time.Sleep(time.Until(end))
		probe.take(&probe.b)
	}
	wg.Wait()
	// The first locker to fail cancels the others: report its error, not
	// theirs.
	var failed error
	for i, l := range ls {
		if l.err != nil && (failed == nil || !errors.Is(l.err, context.Canceled) && errors.Is(failed, context.Canceled)) {
			failed = fmt.Errorf("connection %d, locker %d: Lock/Unlock: %w", i/j.depth, i%j.depth, l.err)
		}
	}
	if failed != nil {
		return rec, failed
	}
	var h loadgen.Histogram
	var pairs, reqs uint64
	for _, l := range ls {
		h.Merge(&l.hist)
		pairs += l.pairs
		reqs += l.reqs
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
