package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/cluster"
)

// Tests of a member whose raft directory was damaged while it was down
// (issue #19 §2): the newest raft-wal segment cut short, or a byte of it
// flipped. The member must refuse to start rather than serve, or vote
// with, a log that lacks what it had acknowledged; --raft-recover lets a
// member of a larger cluster rejoin without voting until it has copied
// the lost entries back.

// raftDir is the member's --raft-dir.
func raftDir(t *testing.T, m *member) string {
	t.Helper()
	i := slices.Index(m.args, "--raft-dir")
	if i < 0 || i+1 >= len(m.args) {
		t.Fatalf("%s has no --raft-dir", m.id)
	}
	return m.args[i+1]
}

// newestSegment is the path of the member's newest raft-wal segment
// (file names are the base index then the id, zero-padded).
func newestSegment(t *testing.T, m *member) string {
	t.Helper()
	ps, err := filepath.Glob(filepath.Join(raftDir(t, m), "wal", "*.wal"))
	if err != nil || len(ps) == 0 {
		t.Fatalf("%s: no raft-wal segment: %v", m.id, err)
	}
	slices.Sort(ps)
	return ps[len(ps)-1]
}

// segmentEntries walks a segment file as raft-wal's README describes it
// (a 32-byte header, then 8-byte aligned frames: type, 3 reserved bytes,
// a uint32 length; type 1 entry, 2 index, 3 commit whose length field is
// a CRC) and returns the offsets of its entry frames and the end of its
// last commit frame: the bytes in use.
func segmentEntries(t *testing.T, path string) (entries []int64, used int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for off := int64(32); off+8 <= int64(len(b)); {
		typ := b[off]
		n := int64(b[off+4]) | int64(b[off+5])<<8 | int64(b[off+6])<<16 | int64(b[off+7])<<24 // little-endian
		switch typ {
		case 1, 2:
			if typ == 1 {
				entries = append(entries, off)
			}
			off += 8 + n + (8-n%8)%8
		case 3:
			off += 8
			used = off
		default:
			return entries, used
		}
	}
	return entries, used
}

// refuses runs m's binary on its raft directory with extra flags and
// expects it to exit non-zero within a bound; it returns the output.
func refuses(t *testing.T, m *member, extra ...string) string {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(binary(t), append(slices.Clone(m.args), extra...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err == nil {
			t.Fatalf("%s started on its damaged directory and exited 0:\n%s", m.id, tail(out.String()))
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("%s did not refuse its damaged directory within 30 s:\n%s", m.id, tail(out.String()))
	}
	return out.String()
}

// tail is the end of a process's output, enough to see why it failed.
func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}

// mustSay fails unless out holds every part.
func mustSay(t *testing.T, what, out string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(out, p) {
			t.Fatalf("%s lacks %q:\n%s", what, p, tail(out))
		}
	}
}

// pipelinedIncr sends n incr's of key by 1 on one connection to m, all at
// once, and checks every reply acknowledges the next value from start+1.
func pipelinedIncr(t *testing.T, m *member, key string, start, n int) {
	t.Helper()
	c, err := net.Dial("tcp", m.client)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	var req bytes.Buffer
	for range n {
		fmt.Fprintf(&req, "incr\n%s\n1\n", key)
	}
	if _, err := c.Write(req.Bytes()); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	for i := 1; i <= n; i++ {
		line, err := r.ReadString('\n')
		if want := fmt.Sprintf("ok %d\n", start+i); line != want {
			t.Fatalf("incr #%d of %s on %s: %q %v, want %q", i, key, m.id, line, err, want)
		}
	}
}

var lostRange = regexp.MustCompile(`entries (\d+)\.\.(\d+) are (lost|unusable)`)

// TestRaftDamageSingleMemberRefuses is issue #19 §2's first case: a lone
// member acknowledges locks and counter increments, is SIGKILLed, its
// newest segment loses half its bytes; restarted, it must say so and
// exit, naming the directory and the lost entries. --raft-accept-loss
// then starts it without them.
func TestRaftDamageSingleMemberRefuses(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	ms := startMembers(t, 1)
	m := ms[0]
	leader(t, ms, nil, 30*time.Second)
	holder := dialMember(t, m)
	for i := range 200 {
		grantFence(t, holder.do("l", fmt.Sprint("held-", i), "0 300", 20*time.Second))
	}
	pipelinedIncr(t, m, "acked", 0, 1000)
	m.signal(syscall.SIGKILL)
	truncateNewestSegment(t, m)

	out := refuses(t, m)
	mustSay(t, "the refusal", out, raftDir(t, m), "only voter", "--raft-accept-loss", "backup")
	if r := lostRange.FindStringSubmatch(out); r == nil || r[3] != "lost" {
		t.Fatalf("the refusal names no lost range:\n%s", tail(out))
	}

	m.args = append(m.args, "--raft-accept-loss")
	m.start()
	leader(t, ms, nil, 30*time.Second)
	got := ask(m.client, "get", "acked", "_", 20*time.Second)
	var v int
	if _, err := fmt.Sscanf(got, "ok %d", &v); err != nil || v >= 1000 {
		t.Fatalf("counter after the accepted loss: %q, want fewer than the 1000 acknowledged", got)
	}
	t.Logf("the lone member refused (%s); with --raft-accept-loss it serves the counter at %d of 1000", lostRange.FindString(out), v)
}

// TestRaftDamageFlippedByteRefused: one byte flipped in the middle of
// the used part of a segment, inside an entry that raft-wal would read
// back without checking, is found at startup.
func TestRaftDamageFlippedByteRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	ms := startMembers(t, 1)
	m := ms[0]
	leader(t, ms, nil, 30*time.Second)
	pipelinedIncr(t, m, "acked", 0, 1000)
	m.signal(syscall.SIGKILL)
	seg := newestSegment(t, m)
	entries, used := segmentEntries(t, seg)
	var at int64 = -1
	for _, off := range entries {
		if off >= used/2 {
			at = off + 8 + 4 // inside the entry's encoded bytes
			break
		}
	}
	if at < 0 {
		t.Fatalf("no entry frame in the second half of %s", seg)
	}
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := []byte{0}
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x04
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
	f.Close()

	out := refuses(t, m)
	mustSay(t, "the refusal", out, raftDir(t, m), filepath.Base(seg), "checksum mismatch")
	if r := lostRange.FindStringSubmatch(out); r == nil || r[3] != "unusable" {
		t.Fatalf("the refusal names no unusable range:\n%s", tail(out))
	}
}

// TestRaftDamageClusterMemberRecovers is issue #19 §2's second case: n3
// is down while n1 and n2 acknowledge writes; both are SIGKILLed and n1's
// newest segment loses half its bytes. Without --raft-recover n1 refuses
// to start. With it, n1 and n3 together elect no one (n3 lacks the writes
// and n1 does not vote); once n2 returns it leads, the counter holds every
// acknowledged increment, and n1, caught up, votes again.
func TestRaftDamageClusterMemberRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process, tens of seconds")
	}
	const writes = 300
	ms := startMembers(t, 3)
	n1, n2, n3 := ms[0], ms[1], ms[2]
	leader(t, ms, nil, 30*time.Second)
	n3.signal(syscall.SIGKILL)
	l, _ := leader(t, ms, n3, 30*time.Second)
	// With n3 down, every write committed is on n1 and on n2.
	pipelinedIncr(t, l, "acked", 0, writes)
	n1.signal(syscall.SIGKILL)
	n2.signal(syscall.SIGKILL)
	truncateNewestSegment(t, n1)

	out := refuses(t, n1)
	mustSay(t, "n1's refusal", out, raftDir(t, n1), "one of 3 voters", "--raft-recover")
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "level=ERROR") {
			t.Logf("n1 without --raft-recover: %s", line)
		}
	}
	if r := lostRange.FindStringSubmatch(out); r == nil || r[3] != "lost" {
		t.Fatalf("n1's refusal names no lost range:\n%s", tail(out))
	}

	n3.start()
	n1.args = append(n1.args, "--raft-recover")
	n1.start()
	within(t, 15*time.Second, "n1 recovering (its raft-mark owes the lost entries)", func() (bool, string) {
		mk, ok, err := cluster.ReadLogMark(raftDir(t, n1))
		return ok && mk.Owed > 0, fmt.Sprintf("%+v %v %v", mk, ok, err)
	})

	// n1 and n3 campaign (n3 lacks the writes, n1 refuses its vote and
	// cannot ask for any): no write may be accepted. Watch until both
	// have been seen campaigning and several election timeouts passed.
	began := time.Now()
	campaigned := map[string]bool{}
	for deadline := began.Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		for _, m := range []*member{n1, n3} {
			if got := ask(m.client, "incr", "noleader", "1", time.Second); strings.HasPrefix(got, "ok") {
				t.Fatalf("%s accepted a write while n2, the only other member with the acknowledged writes, was down: %q", m.id, got)
			}
			if strings.Contains(ask(m.client, "stats", "_", "_", time.Second), `"role":"candidate"`) {
				campaigned[m.id] = true
			}
		}
		if len(campaigned) == 2 && time.Since(began) > 5*time.Second {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("within 30 s not both n1 and n3 were seen campaigning (seen: %v)", campaigned)
		}
	}

	n2.start()
	l, _ = leader(t, ms, nil, 30*time.Second)
	if got := ask(l.client, "get", "acked", "_", 20*time.Second); got != fmt.Sprintf("ok %d", writes) {
		t.Fatalf("counter on %s after n2's return: %q, want every acknowledged increment (ok %d)", l.id, got, writes)
	}
	within(t, 30*time.Second, "n1 recovered (its log reached what it had acknowledged)", func() (bool, string) {
		mk, ok, err := cluster.ReadLogMark(raftDir(t, n1))
		return ok && mk.Owed == 0, fmt.Sprintf("%+v %v %v", mk, ok, err)
	})
	// n1 votes again: without the leader, the two others elect one, which
	// takes n1's vote (or n1 itself).
	l.signal(syscall.SIGKILL)
	l2, _ := leader(t, ms, l, 30*time.Second)
	if got := ask(l2.client, "get", "acked", "_", 20*time.Second); got != fmt.Sprintf("ok %d", writes) {
		t.Fatalf("counter on %s after %s went down: %q, want ok %d", l2.id, l.id, got, writes)
	}
	t.Logf("n1 refused (%s), recovered from %s, and %s was elected after %s went down", lostRange.FindString(out), l.id, l2.id, l.id)
}

// TestRaftDamageTwoRecoverFromHealthy is issue #34's first case: all
// three members are SIGKILLed after 1,000 acknowledged increments, and
// the newest segment of two of them loses half its bytes. Restarted,
// those two with --raft-recover and the third plainly, the third, which
// holds every entry, must be elected: the two recovering members refuse
// their votes only to candidates whose log lacks what they owe. The
// counter then reads 1000 and both damaged members catch up.
//
// The member left whole is the one that led: a leader stores each entry
// before it sends it, so its log holds every entry a follower
// acknowledged, whenever the three die.
func TestRaftDamageTwoRecoverFromHealthy(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process, tens of seconds")
	}
	const writes = 1000
	ms := startMembers(t, 3)
	healthy, _ := leader(t, ms, nil, 30*time.Second)
	pipelinedIncr(t, healthy, "acked", 0, writes)
	var damaged []*member
	for _, m := range ms {
		if m != healthy {
			damaged = append(damaged, m)
		}
	}
	// All three die; the leader first would let the two others elect one
	// of themselves in between, so the followers go first.
	for _, m := range append(slices.Clone(damaged), healthy) {
		m.signal(syscall.SIGKILL)
	}
	owed := map[string]uint64{}
	for _, m := range damaged {
		truncateNewestSegment(t, m)
		mk, ok, err := cluster.ReadLogMark(raftDir(t, m))
		if !ok || err != nil {
			t.Fatalf("%s's raft-mark: %+v %v %v", m.id, mk, ok, err)
		}
		owed[m.id] = mk.Stored
	}

	for _, m := range damaged {
		m.args = append(m.args, "--raft-recover")
		m.start()
	}
	restarted := time.Now()
	healthy.start()
	l, _ := leader(t, ms, nil, 60*time.Second)
	elected := time.Since(restarted)
	if l != healthy {
		t.Fatalf("%s was elected; only %s holds every acknowledged entry (the others owe %v)", l.id, healthy.id, owed)
	}
	if got := ask(l.client, "get", "acked", "_", 20*time.Second); got != fmt.Sprintf("ok %d", writes) {
		t.Fatalf("counter on %s: %q, want every acknowledged increment (ok %d)", l.id, got, writes)
	}
	for _, m := range damaged {
		within(t, 30*time.Second, m.id+" recovered (its log reached what it had acknowledged)", func() (bool, string) {
			mk, ok, err := cluster.ReadLogMark(raftDir(t, m))
			return ok && mk.Owed == 0 && mk.Stored >= owed[m.id], fmt.Sprintf("%+v %v %v", mk, ok, err)
		})
	}
	t.Logf("%s (whole) was elected %v after the restart; %s and %s (owing up to %v) recovered from it; counter %d",
		healthy.id, elected.Round(100*time.Millisecond), damaged[0].id, damaged[1].id, owed, writes)
}

// TestRaftDamageEmptiedMarkRefused is issue #34's second case: a lone
// member's raft-mark zero-filled (or emptied) and its newest segment
// halved while it was down. The mark must count as damage (the refusal
// names it and the ways out), not as the blank mark of a new directory,
// which would have the member serve the log as it is.
func TestRaftDamageEmptiedMarkRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	for _, tc := range []struct {
		name    string
		content []byte
		says    string
	}{
		{"zeros", make([]byte, 1024), "holds only zero bytes"},
		{"empty", nil, "is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := startMembers(t, 1)
			m := ms[0]
			leader(t, ms, nil, 30*time.Second)
			pipelinedIncr(t, m, "acked", 0, 1000)
			m.signal(syscall.SIGKILL)
			truncateNewestSegment(t, m)
			mark := filepath.Join(raftDir(t, m), "raft-mark")
			if err := os.WriteFile(mark, tc.content, 0o600); err != nil {
				t.Fatal(err)
			}
			out := refuses(t, m)
			mustSay(t, "the refusal", out, "raft-mark file is unreadable", mark+" "+tc.says, "--raft-accept-loss", "backup")
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, "level=ERROR") {
					t.Logf("refused: %s", line)
				}
			}
		})
	}
}

// TestRaftDamageFlags: --raft-recover and --raft-accept-loss (and their
// variables) concern a raft directory, and exclude each other.
func TestRaftDamageFlags(t *testing.T) {
	base := []string{"--raft-dir", "/d", "--node-id", "n1", "--raft-addr", "127.0.0.1:7001",
		"--cluster-peers", "n1=127.0.0.1:7001@127.0.0.1:6388", "--raft-auth-token", strings.Repeat("t", 32)}
	cfg, _ := mustLoad(t, append(slices.Clone(base), "--raft-recover"), nil)
	if !cfg.Cluster.Recover || cfg.Cluster.AcceptLoss {
		t.Fatalf("--raft-recover: %+v", cfg.Cluster)
	}
	cfg, _ = mustLoad(t, base, map[string]string{"DFLOCKD_RAFT_ACCEPT_LOSS": "true"})
	if cfg.Cluster.Recover || !cfg.Cluster.AcceptLoss {
		t.Fatalf("DFLOCKD_RAFT_ACCEPT_LOSS: %+v", cfg.Cluster)
	}
	wantErr(t, append(slices.Clone(base), "--raft-recover", "--raft-accept-loss"), nil, "exclude each other")
	wantErr(t, []string{"--raft-recover"}, nil, "need --raft-dir")
	wantErr(t, nil, map[string]string{"DFLOCKD_RAFT_ACCEPT_LOSS": "1"}, "need --raft-dir")
}

// truncateNewestSegment cuts m's newest raft-wal segment to half of its
// used bytes, as a disk that lost the end of a file would.
func truncateNewestSegment(t *testing.T, m *member) {
	t.Helper()
	seg := newestSegment(t, m)
	_, used := segmentEntries(t, seg)
	if err := os.Truncate(seg, used/2); err != nil {
		t.Fatal(err)
	}
}
