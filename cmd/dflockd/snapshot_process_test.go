package main

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/fence"
)

// TestClusterSnapshotRestore: a backup saved under load from a 3-member
// cluster, restored into a fresh 3-member cluster: the restored state's
// digest is the backup's, the first fence after the restore is above
// every fence the source issued (after the save too), a lock held at save
// time stays held until its lease ends, measured from the restored
// cluster's start, and a waiter at save time is not resurrected.
func TestClusterSnapshotRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process, seconds")
	}
	const admin = "adm1n-t0ken-for-the-test"
	const lease = 12 * time.Second
	src := startHTTPMembers(t, 3, "--admin-token", admin)
	l := httpLeader(t, src)

	// A lock held at save time, and a waiter behind it.
	holder := dialMember(t, l.member)
	granted := time.Now()
	f0 := grantFence(t, holder.do("l", "held", fmt.Sprint("0 ", int(lease.Seconds())), 10*time.Second))
	waiter := dialMember(t, l.member)
	fmt.Fprintf(waiter.c, "l\nheld\n60 60\n")

	// Load: clients locking and releasing, each keeping the highest
	// fence it was granted.
	var maxFence atomic.Uint64
	maxFence.Store(f0)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", l.client)
			if err != nil {
				return
			}
			defer c.Close()
			rd := bufio.NewReader(c)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("load-%d-%d", g, i%16)
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				fmt.Fprintf(c, "l\n%s\n0 30\n", key)
				line, err := rd.ReadString('\n')
				f := strings.Fields(line)
				if err != nil || len(f) != 3 || f[0] != "ok" {
					return
				}
				if tok, ok := fence.ParseToken([]byte(f[1])); ok {
					for {
						m := maxFence.Load()
						if tok.Fence <= m || maxFence.CompareAndSwap(m, tok.Fence) {
							break
						}
					}
				}
				fmt.Fprintf(c, "r\n%s\n%s\n", key, f[1])
				if _, err := rd.ReadString('\n'); err != nil {
					return
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)

	dir := t.TempDir()
	file := filepath.Join(dir, "backup.snap")
	var https []string
	for _, m := range src {
		https = append(https, m.http)
	}
	out, errOut, code := dflockctl(t, []string{"DFLOCKD_ADMIN_TOKEN=" + admin}, "snapshot", "save", file, "--http", strings.Join(https, ","))
	saved := time.Now()
	if code != 0 {
		t.Fatalf("snapshot save: exit %d\n%s%s", code, out, errOut)
	}
	time.Sleep(300 * time.Millisecond) // the source goes on issuing fences after the save
	close(stop)
	wg.Wait()
	if maxFence.Load() <= f0 {
		t.Fatal("the load was granted nothing")
	}
	out, errOut, code = dflockctl(t, nil, "snapshot", "status", file)
	digest := regexp.MustCompile(`(?m)^digest +([0-9a-f]{64})$`).FindStringSubmatch(out)
	index := regexp.MustCompile(`(?m)^index +(\d+) `).FindStringSubmatch(out)
	held := regexp.MustCompile(`(?m)^locks held +[1-5]$`).MatchString(out) // "held" and the load's of the moment
	if code != 0 || digest == nil || index == nil || !held {
		t.Fatalf("snapshot status: exit %d\n%s%s", code, out, errOut)
	}
	for _, m := range src {
		m.signal(9)
	}

	// A fresh cluster on new addresses, each member restored from the file.
	var dst []*httpMember
	var peers []string
	for i := range 3 {
		m := &httpMember{member: &member{t: t, id: fmt.Sprint("n", i+1), client: freeAddr(t)}, http: freeAddr(t)}
		raftAddr := freeAddr(t)
		peers = append(peers, fmt.Sprintf("%s=%s@%s", m.id, raftAddr, m.client))
		m.args = []string{"--raft-addr", raftAddr, "--admin-token", admin}
		dst = append(dst, m)
	}
	ndir := t.TempDir()
	for _, m := range dst {
		cmd := exec.Command(binary(t), "snapshot", "restore", file, "--raft-dir", filepath.Join(ndir, m.id),
			"--node-id", m.id, "--cluster-peers", strings.Join(peers, ","))
		b, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(b), "digest "+digest[1]+" (the snapshot's)") {
			t.Fatalf("restore %s: %v\n%s", m.id, err, b)
		}
	}
	// A restore refuses a directory it already built.
	if b, err := exec.Command(binary(t), "snapshot", "restore", file, "--raft-dir", filepath.Join(ndir, "n1")).CombinedOutput(); err == nil ||
		!strings.Contains(string(b), "is not empty") {
		t.Fatalf("a second restore into n1: %v\n%s", err, b)
	}
	for _, m := range dst {
		m.args = append(memberArgs(m, ndir, strings.Join(peers, ",")), m.args...)
		m.start()
	}
	nl := httpLeader(t, dst)
	up := time.Now()
	for _, m := range dst {
		// Each member started from the backup's state, at its index.
		want := fmt.Sprintf("index=%s state_digest=%s", index[1], digest[1])
		within(t, 5*time.Second, m.id+" logs its state at start", func() (bool, string) {
			return strings.Contains(m.log.String(), want), want
		})
	}

	// Followers redirect to the new leader's client address, not to an
	// address of the backup's source.
	for _, m := range dst {
		if m != nl {
			within(t, 5*time.Second, m.id+" redirecting to the new leader", func() (bool, string) {
				got := ask(m.client, "l", "redirect-probe", "0", 2*time.Second)
				return got == "error_not_leader "+nl.client, got
			})
		}
	}

	// The lock held at save time is held still; the first fence after the
	// restore is above every fence the source issued.
	if got := ask(nl.client, "l", "held", "0", 5*time.Second); got != "timeout" {
		t.Fatalf("the lock held at save time, after the restore: %q", got)
	}
	first := grantFence(t, ask(nl.client, "l", "fresh", "0 5", 5*time.Second))
	if first <= maxFence.Load() {
		t.Fatalf("first fence after the restore %d, not above %d, the highest the source issued", first, maxFence.Load())
	}
	// Until its lease ends, measured from the restored cluster's start:
	// then a new client gets it, not the waiter of save time.
	left := lease - saved.Sub(granted)
	c := dialMember(t, nl.member)
	var got string
	for deadline := time.Now().Add(left + 15*time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if got = c.do("l", "held", "0 30", 5*time.Second); got != "timeout" {
			break
		}
	}
	freed := time.Since(up)
	if f := grantFence(t, got); f <= first {
		t.Fatalf("fence %d after %d", f, first)
	}
	if freed < left-2*time.Second {
		t.Fatalf("the lock held at save time was free %v after the restored cluster's start; its lease had %v left", freed, left)
	}
	// Bounded in memory: each restored member holds a small state.
	for _, m := range dst {
		if rss := (&serverProc{cmd: m.cmd}).rss(t); rss > maxMemberRSS {
			t.Errorf("%s: resident set %d MiB, over %d MiB", m.id, rss>>20, maxMemberRSS>>20)
		}
	}
	t.Logf("lease left at save %v, free %v after the restored leader answered; fences: source up to %d, restored from %d",
		left.Round(time.Millisecond), freed.Round(time.Millisecond), maxFence.Load(), first)
}

// maxMemberRSS bounds a restored member's memory in the test: a few
// dozen keys, and the runtime, raft and its log cache (tens of MiB).
const maxMemberRSS = 256 << 20
