package main

// The cluster comparison (--workloads cluster, issue #12): a 3-member
// dflockd-ng cluster on loopback against the single node and a 3-member
// etcd cluster, lock+release side by side in one run, then the cluster's
// failover time.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dflockd-ng/dflockd/benchmarks/loadgen"
	"github.com/dflockd-ng/dflockd/benchmarks/suite"
)

const (
	clusterMembers = 3
	// failoverPoll is the pause between two try-locks on one member while
	// the failover is timed: the figure's resolution.
	failoverPoll = 10 * time.Millisecond
	// failoverAsk bounds one try-lock of the failover poll: a new leader
	// holds a request until it commits, which may take an election.
	failoverAsk = 3 * time.Second
	// clusterWait bounds finding a leader, a failover and a rejoin: raft
	// elects within a few 1 s timeouts; anything longer is a failure.
	clusterWait = 30 * time.Second
)

// member is one dflockd-ng cluster member started by the suite.
type member struct {
	id   string
	addr string // client host:port
	args []string
	p    *proc
}

// clusterPhase runs the comparison on servers of its own: the single
// node, the cluster (load at its leader only) and etcd3, at s.clusterConns
// × each depth, repetitions outermost and the three targets interleaved;
// then s.failoverTrials kills of the cluster's leader.
func (s *runner) clusterPhase(ctx context.Context) (*suite.ClusterResult, error) {
	disk, fs, err := s.clusterDisk()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(disk, "dflocksuite-cluster-")
	if err != nil {
		return nil, err
	}
	s.cleanups = append(s.cleanups, func() { os.RemoveAll(dir) })
	fmt.Fprintf(s.stderr, "dflocksuite: cluster comparison: data under %s (%s)\n", dir, fs)

	single, err := s.startNG(ctx, s.ngBin)
	if err != nil {
		return nil, err
	}
	members, err := s.startCluster(ctx, dir)
	if err != nil {
		return nil, err
	}
	leader, err := findLeader(ctx, members, nil)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(s.stderr, "dflocksuite: cluster leader %s (%s)\n", leader.id, leader.addr)
	var group []int
	for _, m := range members {
		group = append(group, m.p.pid)
	}
	targets := []*target{
		{name: suite.ClusterSingle, addr: single.addr, kind: "line", pid: single.pid, freshKeys: true},
		{name: suite.ClusterLeader, addr: leader.addr, kind: "line", group: group, freshKeys: true},
	}
	s.clusterNote = append(s.clusterNote,
		fmt.Sprintf("`%s` = dflockd-ng built from this tree, one node, `--loops %d` (no raft, nothing on disk).", suite.ClusterSingle, s.ngLoops),
		fmt.Sprintf("`%s` = %d members of the same binary on loopback (`--raft-dir`: raft-wal, an fsync per append; hashicorp/raft with 1 s heartbeat and election timeouts), "+
			"all pinned with the other servers (CPU %s), raft data on %s (%s); the load goes to the leader only, found by a try-lock that one member grants "+
			"(the others answer `error_not_leader <leader>`). Server CPU is the three members'.",
			suite.ClusterLeader, clusterMembers, orAll(s.serverCPUs), disk, fs),
		fmt.Sprintf("`%s` and `%s`: the suite's load generator, %d connections × depth requests in flight, one key per slot, fresh keys for every run.",
			suite.ClusterSingle, suite.ClusterLeader, s.clusterConns))
	if s.noEtcd {
		s.clusterNote = append(s.clusterNote, "`etcd3`: not run (--no-etcd).")
	} else {
		t, ver, err := s.startEtcdCluster(ctx, suite.ClusterEtcd, clusterMembers, dir)
		if err != nil {
			s.clusterNote = append(s.clusterNote, "`etcd3`: unavailable: "+err.Error())
			fmt.Fprintf(s.stderr, "dflocksuite: etcd3 unavailable: %v\n", err)
		} else {
			targets = append(targets, t)
			s.clusterNote = append(s.clusterNote, fmt.Sprintf("`%s` = etcd %s, %d members on loopback pinned like the others, data dirs on %s (%s) like the cluster's, so both pay a real fsync; "+
				"each load-generator connection is one clientv3.Client given all three members' endpoints (the client spreads its requests over them, followers forward proposals to the leader); "+
				"per pair `concurrency.NewMutex(session, key).Lock` + `Unlock`. At depth d every client carries d lockers, each with a session (lease) and a key of its own, "+
				"looping concurrently: Lock blocks, so depth is concurrency over one client connection, not pipelining. Server CPU is the three members'.",
				suite.ClusterEtcd, ver, clusterMembers, disk, fs))
		}
	}

	var jobs []job
	for rep := 1; rep <= s.reps; rep++ {
		for _, d := range s.clusterDepths {
			for _, t := range targets {
				jobs = append(jobs, job{t, loadgen.Lock, s.clusterConns, d, rep})
			}
		}
	}
	// A leader change under load (a heartbeat missed on a busy core)
	// fails the run with error_not_leader: find the new leader and run it
	// once more, saying so.
	retry := func(j job, err error) bool {
		if j.t.name != suite.ClusterLeader || !strings.Contains(err.Error(), "error_not_leader") {
			return false
		}
		l, lerr := findLeader(ctx, members, nil)
		if lerr != nil {
			return false
		}
		s.clusterNote = append(s.clusterNote, fmt.Sprintf("The leader changed during the run at depth %d, repetition %d (now %s); that run was made again.", j.depth, j.rep, l.id))
		j.t.addr = l.addr
		return true
	}
	recs, err := s.runJobs(ctx, jobs, retry)
	if err != nil {
		return nil, err
	}
	// The load is over; etcd's members are not needed any more and would
	// only take CPU from the failover.
	if etcd := targets[len(targets)-1]; etcd.kind == "etcd" {
		for _, p := range s.procs {
			if slices.Contains(etcd.group, p.pid) {
				p.stop()
			}
		}
	}
	res := &suite.ClusterResult{Conns: s.clusterConns, Runs: recs}
	for trial := 1; trial <= s.failoverTrials; trial++ {
		fmt.Fprintf(s.stderr, "[failover %d/%d] … ", trial, s.failoverTrials)
		f, err := s.failover(ctx, members, trial)
		if err == nil {
			fmt.Fprintf(s.stderr, "%s killed, %s granted after %s\n", f.Killed, f.NewLeader, suite.FmtNs(float64(f.Ns)))
			res.Failover = append(res.Failover, f)
			if trial < s.failoverTrials {
				fmt.Fprintf(s.stderr, "[failover %d/%d] restarting %s … ", trial, s.failoverTrials, f.Killed)
				began := time.Now()
				if err = s.rejoin(ctx, members, f.Killed); err == nil {
					fmt.Fprintf(s.stderr, "follows a leader after %v\n", time.Since(began).Round(10*time.Millisecond))
				}
			}
		}
		if err != nil {
			fmt.Fprintln(s.stderr, "FAIL")
			if len(res.Failover) == 0 {
				return nil, fmt.Errorf("failover trial %d: %w", trial, err)
			}
			res.FailoverNote = fmt.Sprintf("(Trial %d of %d failed: %v.)", trial, s.failoverTrials, err)
			break
		}
	}
	return res, nil
}

func orAll(cpus string) string {
	if cpus == "" {
		return "any, unpinned"
	}
	return cpus
}

// ngArgs are the arguments every dflockd-ng the suite starts gets.
func (s *runner) ngArgs(port string) []string {
	return []string{"--host", "127.0.0.1", "--port", port, "--loops", fmt.Sprint(s.ngLoops),
		"--max-locks", fmt.Sprint(s.ngMaxLocks), "--max-waiters", "0", "--read-timeout", "600"}
}

// startCluster starts the members, bootstrapped from one peer list with a
// random raft token, their raft directories under dir, and waits until
// each answers a ping (which any member does from its own replica, leader
// or not).
func (s *runner) startCluster(ctx context.Context, dir string) ([]*member, error) {
	var tok [32]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(tok[:])
	ms := make([]*member, clusterMembers)
	raft := make([]string, clusterMembers)
	var peers []string
	for i := range ms {
		client, err := freeAddr()
		if err != nil {
			return nil, err
		}
		if raft[i], err = freeAddr(); err != nil {
			return nil, err
		}
		ms[i] = &member{id: fmt.Sprint("n", i+1), addr: client}
		peers = append(peers, fmt.Sprintf("%s=%s@%s", ms[i].id, raft[i], client))
	}
	for i, m := range ms {
		_, port, _ := strings.Cut(m.addr, ":")
		m.args = append(s.ngArgs(port), "--raft-dir", filepath.Join(dir, m.id), "--node-id", m.id,
			"--raft-addr", raft[i], "--cluster-peers", strings.Join(peers, ","), "--cluster-bootstrap",
			"--raft-auth-token", token, "--shutdown-timeout", "1")
		var err error
		if m.p, err = s.spawnProc("dflockd-ng "+m.id, s.ngBin, m.args, m.addr); err != nil {
			return nil, err
		}
	}
	for _, m := range ms {
		if err := s.await(ctx, m.p, probeLine); err != nil {
			return nil, err
		}
	}
	return ms, nil
}

// writeReply is a member's answer to a try-lock.
type writeReply struct {
	granted bool
	token   string // of a grant
	leader  string // error_not_leader's leader client address; "" when the member knows none
}

// parseWriteReply reads a member's one-line answer to a try-lock: a grant
// ("ok <token> <lease>", and a fence under --compat=rf) or a redirect
// ("error_not_leader", bare while no leader is known, else with the
// leader's client host:port). Anything else is an error: try-locks here
// are on fresh keys, so not even "timeout" is a right answer.
func parseWriteReply(line string) (writeReply, error) {
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	f := strings.Fields(line)
	switch {
	case len(f) >= 3 && len(f) <= 4 && f[0] == "ok" && line == strings.Join(f, " "):
		return writeReply{granted: true, token: f[1]}, nil
	case line == "error_not_leader":
		return writeReply{}, nil
	case len(f) == 2 && f[0] == "error_not_leader" && line == strings.Join(f, " "):
		if _, port, err := net.SplitHostPort(f[1]); err != nil || port == "" {
			return writeReply{}, fmt.Errorf("redirect to a bad address: %q", line)
		}
		return writeReply{leader: f[1]}, nil
	}
	return writeReply{}, fmt.Errorf("unexpected reply %q", line)
}

// lineConn is one dflockd connection, a request at a time.
type lineConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialLine(addr string, within time.Duration) (*lineConn, error) {
	c, err := net.DialTimeout("tcp", addr, within)
	if err != nil {
		return nil, err
	}
	return &lineConn{c, bufio.NewReader(c)}, nil
}

func (l *lineConn) do(cmd, key, arg string, within time.Duration) (string, error) {
	_ = l.c.SetDeadline(time.Now().Add(within))
	if _, err := fmt.Fprintf(l.c, "%s\n%s\n%s\n", cmd, key, arg); err != nil {
		return "", err
	}
	return l.r.ReadString('\n')
}

// tryLock asks a member for a try-lock on a new connection, follows no
// redirect, and releases a grant. at is when the answer was read.
func tryLock(addr, key string, within time.Duration) (r writeReply, at time.Time, err error) {
	l, err := dialLine(addr, within)
	if err != nil {
		return r, at, err
	}
	defer l.c.Close()
	line, err := l.do("l", key, "0", within)
	at = time.Now()
	if err != nil {
		return r, at, err
	}
	if r, err = parseWriteReply(line); err != nil || !r.granted {
		return r, at, err
	}
	rel, err := l.do("r", key, r.token, within)
	if err == nil && rel != "ok\n" {
		err = fmt.Errorf("%q", rel)
	}
	if err != nil {
		return r, at, fmt.Errorf("release %s: %w", key, err)
	}
	return r, at, nil
}

var probeSeq struct {
	sync.Mutex
	n int
}

// freshKey is a key no run or probe used before.
func freshKey(what string) string {
	probeSeq.Lock()
	defer probeSeq.Unlock()
	probeSeq.n++
	return fmt.Sprintf("suite.%s.%d.%d", what, time.Now().UnixNano(), probeSeq.n)
}

// findLeader polls the running members but skip until one grants a
// try-lock (which it then releases), for at most clusterWait.
func findLeader(ctx context.Context, ms []*member, skip *member) (*member, error) {
	deadline := time.Now().Add(clusterWait)
	var last error
	for time.Now().Before(deadline) {
		for _, m := range ms {
			if m == skip || m.p.done {
				continue
			}
			r, _, err := tryLock(m.addr, freshKey("probe"), 2*time.Second)
			if err == nil && r.granted {
				return m, nil
			}
			if err != nil {
				last = fmt.Errorf("%s: %w", m.id, err)
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("no cluster member granted a try-lock within %v (last error: %v)", clusterWait, last)
}

// failover kills the leader with SIGKILL and times the first try-lock
// another member grants: each survivor is asked on a new connection every
// failoverPoll, no redirect followed.
func (s *runner) failover(ctx context.Context, ms []*member, trial int) (suite.FailoverTrial, error) {
	old, err := findLeader(ctx, ms, nil)
	if err != nil {
		return suite.FailoverTrial{}, err
	}
	pctx, cancel := context.WithTimeout(ctx, clusterWait)
	defer cancel()
	type grant struct {
		m  *member
		at time.Time
	}
	grants := make(chan grant, len(ms))
	killed := time.Now()
	old.p.kill()
	var wg sync.WaitGroup
	for _, m := range ms {
		if m == old {
			continue
		}
		wg.Go(func() {
			for n := 0; pctx.Err() == nil; n++ {
				// A grant counts when it is read, whatever its release
				// meets afterwards.
				r, at, _ := tryLock(m.addr, fmt.Sprintf("suite.failover.t%d.%s.%d", trial, m.id, n), failoverAsk)
				if r.granted {
					grants <- grant{m, at}
					cancel()
					return
				}
				select {
				case <-pctx.Done():
				case <-time.After(failoverPoll):
				}
			}
		})
	}
	wg.Wait()
	<-old.p.exited
	close(grants)
	var first *grant
	for g := range grants {
		if first == nil || g.at.Before(first.at) {
			first = &g
		}
	}
	if first == nil {
		if err := ctx.Err(); err != nil {
			return suite.FailoverTrial{}, err
		}
		return suite.FailoverTrial{}, fmt.Errorf("%s killed: no other member granted a write within %v", old.id, clusterWait)
	}
	return suite.FailoverTrial{Killed: old.id, NewLeader: first.m.id, Ns: int64(first.at.Sub(killed))}, nil
}

// rejoin restarts the killed member on its raft directory and waits until
// it follows the leader again: a try-lock on it is redirected to a member's
// address (or granted, if it leads).
func (s *runner) rejoin(ctx context.Context, ms []*member, id string) error {
	var m *member
	for _, x := range ms {
		if x.id == id {
			m = x
		}
	}
	if m == nil {
		return fmt.Errorf("no member %q", id)
	}
	p, err := s.spawnProc("dflockd-ng "+m.id, s.ngBin, m.args, m.addr)
	if err != nil {
		return err
	}
	m.p = p
	if err := s.await(ctx, p, probeLine); err != nil {
		return fmt.Errorf("%s restarted: %w", id, err)
	}
	for deadline := time.Now().Add(clusterWait); time.Now().Before(deadline); {
		r, _, err := tryLock(m.addr, freshKey("rejoin"), 2*time.Second)
		if err == nil && (r.granted || r.leader != "" && r.leader != m.addr) {
			// Heard from a leader; give it a moment to catch up on the log.
			time.Sleep(500 * time.Millisecond)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s restarted but knew no leader within %v", id, clusterWait)
}

// clusterDisk is the directory the cluster's and etcd3's data go under:
// --cluster-dir, else the first of the temporary directory and /var/tmp
// that is not in memory (an fsync on tmpfs costs nothing, which would
// flatter both clusters). fs names its file system.
func (s *runner) clusterDisk() (dir, fs string, err error) {
	cands := []string{os.TempDir(), "/var/tmp"}
	if s.clusterDir != "" {
		cands = []string{s.clusterDir}
	}
	var why []string
	for _, d := range cands {
		var st unix.Statfs_t
		if err := unix.Statfs(d, &st); err != nil {
			why = append(why, fmt.Sprintf("%s: %v", d, err))
			continue
		}
		name, inMemory := fsName(int64(st.Type))
		if inMemory {
			why = append(why, fmt.Sprintf("%s is on %s", d, name))
			continue
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return "", "", err
		}
		return abs, name, nil
	}
	return "", "", errors.New("no directory on a disk for the cluster data (" + strings.Join(why, "; ") + "): give one with --cluster-dir")
}

// fsName names a file system by its statfs magic and says whether it
// lives in memory.
func fsName(magic int64) (name string, inMemory bool) {
	switch magic {
	case unix.TMPFS_MAGIC:
		return "tmpfs", true
	case unix.RAMFS_MAGIC:
		return "ramfs", true
	case unix.EXT4_SUPER_MAGIC:
		return "ext4", false
	case unix.XFS_SUPER_MAGIC:
		return "xfs", false
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs", false
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlayfs", false
	}
	return fmt.Sprintf("file system 0x%x", magic), false
}
