package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/client"
	"github.com/dflockd-ng/dflockd/internal/testserver"
)

// The Go client and dflockctl holding locks on a real 3-member cluster
// whose leader is killed with SIGKILL: a hold the cluster keeps is kept,
// renewed on the new leader; a hold that is really gone is reported.

// failoverBudget bounds every wait of these tests: a failover takes 1–3 s
// here, more on a loaded machine; only a broken cluster or client uses
// it up.
const failoverBudget = 30 * time.Second

// awaitCond polls cond until it holds, failing after failoverBudget.
func awaitCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(failoverBudget); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", failoverBudget, what)
		}
	}
}

func clientAddrs(ms []*member) []string {
	var a []string
	for _, m := range ms {
		a = append(a, m.client)
	}
	return a
}

// lockStat is key's entry in m's stats (false: m does not answer within
// wait, or key is not held).
func lockStat(m *member, key string, wait time.Duration) (st struct {
	Key     string  `json:"key"`
	Left    float64 `json:"lease_expires_in_s"`
	Waiters int     `json:"waiters"`
}, ok bool) {
	doc, ok := strings.CutPrefix(ask(m.client, "stats", "_", "_", wait), "ok ")
	if !ok {
		return st, false
	}
	var all struct {
		Locks []json.RawMessage `json:"locks"`
	}
	if json.Unmarshal([]byte(doc), &all) != nil {
		return st, false
	}
	for _, raw := range all.Locks {
		if json.Unmarshal(raw, &st) == nil && st.Key == key {
			return st, true
		}
	}
	return st, false
}

// leaseLeft is what m's stats say is left of key's lease (false: m does
// not answer, or key is not held).
func leaseLeft(m *member, key string) (float64, bool) {
	st, ok := lockStat(m, key, 2*time.Second)
	return st.Left, ok
}

// awaitRenewal waits until the lease of key, as the leader m reports it,
// grows back: a renewal the cluster applied after the first look, that
// is, one m took (m has applied the old leader's log before it answered
// a write).
func awaitRenewal(t *testing.T, m *member, key string) {
	t.Helper()
	low := -1.0
	awaitCond(t, "a renewal of "+key+" applied by the new leader "+m.id, func() bool {
		left, ok := leaseLeft(m, key)
		switch {
		case !ok:
		case low < 0 || left < low:
			low = left
		case left > low+0.5:
			return true
		}
		return false
	})
}

// onLeader sends one request on a connection to whichever member leads
// (not skip), again on the next leader while the reply is
// error_not_leader; the connection stays open, so a grant stays held.
func onLeader(t *testing.T, ms []*member, skip *member, cmd, key, arg string) string {
	t.Helper()
	var reply string
	awaitCond(t, cmd+" "+key+" answered by a leader", func() bool {
		m, _ := leader(t, ms, skip, failoverBudget)
		reply = dialMember(t, m).do(cmd, key, arg, failoverBudget)
		return !strings.HasPrefix(reply, "error_not_leader")
	})
	return reply
}

func holdLock(t *testing.T, l *client.Lock) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failoverBudget)
	defer cancel()
	if ok, err := l.Acquire(ctx); !ok || err != nil {
		t.Fatalf("Acquire %s = %v, %v", l.Key, ok, err)
	}
}

// lossOf waits for l's loss report and returns its cause.
func lossOf(t *testing.T, l *client.Lock) error {
	t.Helper()
	select {
	case <-l.Lost():
		return l.Err()
	case <-time.After(failoverBudget):
		t.Fatalf("%s: no loss reported within %v", l.Key, failoverBudget)
	}
	return nil
}

// TestClientLockRidesLeaderKill: three Locks are held when the leader is
// killed. "kept", whose client knows every member, is kept: no loss,
// renewals by the new leader, same token and fence, released there.
// "stolen" is released by its token and taken by another client after
// the failover: its next renewal is refused, and that is its loss.
// "cut-off", whose client knows only the member that died, cannot renew
// before its 2 s lease runs out: that is reported, and the cluster then
// grants the key to another.
func TestClientLockRidesLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process, tens of seconds")
	}
	ms := startMembers(t, 3)
	old, _ := leader(t, ms, nil, failoverBudget)
	members := clientAddrs(ms)

	keptErrs := make(chan error, 1)
	// A renewal a second, of a 10 s lease: the failover has 9 s at least.
	kept := &client.Lock{Key: "kept", LeaseTTL: 10, RenewRatio: 0.1, Dialer: client.Cluster(members...),
		OnRenewError: func(err error) { keptErrs <- err }}
	stolen := &client.Lock{Key: "stolen", LeaseTTL: 10, RenewRatio: 0.1, Dialer: client.Cluster(members...)}
	cutOff := &client.Lock{Key: "cut-off", LeaseTTL: 2, Dialer: client.Cluster(old.client)}
	for _, l := range []*client.Lock{kept, stolen, cutOff} {
		holdLock(t, l)
	}
	token, fence := kept.Token(), kept.Fence()
	if fence == 0 {
		t.Fatal("no fence")
	}
	stolenToken := stolen.Token()

	old.signal(syscall.SIGKILL)
	next, _ := leader(t, ms, old, failoverBudget)
	t.Logf("%s killed, %s leads", old.id, next.id)

	// cut-off: the client cannot know the lock is still its own.
	err := lossOf(t, cutOff)
	if !errors.Is(err, client.ErrLost) || !errors.Is(err, client.ErrLeaseExpired) {
		t.Fatalf("cut-off: %v, want the lease run out", err)
	}
	if got := onLeader(t, ms, old, "l", "cut-off", "30"); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("cut-off after its loss: %q, want granted to another client", got)
	}

	// kept: renewed by the new leader, held against others.
	awaitRenewal(t, next, "kept")
	if got := onLeader(t, ms, old, "l", "kept", "0"); got != "timeout" {
		t.Fatalf("try-lock of kept on the new leader: %q, want timeout", got)
	}

	// stolen: released behind the holder's back, taken by another.
	if got := onLeader(t, ms, old, "r", "stolen", stolenToken); got != "ok" {
		t.Fatalf("release of stolen by its token: %q", got)
	}
	if got := onLeader(t, ms, old, "l", "stolen", "0"); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("stolen taken by another: %q", got)
	}
	err = lossOf(t, stolen)
	if !errors.Is(err, client.ErrLost) || !errors.Is(err, client.ErrServer) || errors.Is(err, client.ErrNotLeader) {
		t.Fatalf("stolen: %v, want the renewal refused", err)
	}

	// kept is still kept, seconds and a dozen renewals later.
	awaitRenewal(t, next, "kept")
	select {
	case <-kept.Lost():
		t.Fatalf("kept reported lost: %v", kept.Err())
	case err := <-keptErrs:
		t.Fatalf("kept: OnRenewError(%v)", err)
	default:
	}
	if kept.Token() != token || kept.Fence() != fence {
		t.Fatalf("kept: token %s fence %d after the failover, want %s %d", kept.Token(), kept.Fence(), token, fence)
	}
	ctx, cancel := context.WithTimeout(context.Background(), failoverBudget)
	defer cancel()
	if err := kept.Release(ctx); err != nil {
		t.Fatalf("Release of kept: %v", err)
	}
	if got := onLeader(t, ms, old, "l", "kept", "0"); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("kept after Release: %q, want free", got)
	}
}

// TestDflockctlLockRidesLeaderKill: dflockctl lock, run with --cluster,
// holds the lock while its command runs through the leader's death: the
// command keeps running, the lock stays held and renewed by the new
// leader, and dflockctl exits with the command's status, releasing the
// lock there.
func TestDflockctlLockRidesLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process, tens of seconds")
	}
	ms := startMembers(t, 3)
	old, _ := leader(t, ms, nil, failoverBudget)
	dir := t.TempDir()
	started, stop := filepath.Join(dir, "started"), filepath.Join(dir, "stop")
	cmd := exec.Command(ctlBinary(t), "--cluster", "--endpoints", strings.Join(clientAddrs(ms), ","),
		"lock", "job", "--lease", "10", "--keepalive", "1", "--",
		"sh", "-c", `touch "$1"; while [ ! -e "$2" ]; do sleep 0.05; done; exit 7`, "sh", started, stop)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DFLOCKD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stderr testserver.Output
	cmd.Stderr = &stderr
	// The command, dflockctl's child, holds the stderr pipe too: should
	// the test fail with dflockctl killed, Wait gives up on the pipe.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		os.WriteFile(stop, nil, 0o644) // ends the command, whoever waits for it
		cmd.Process.Kill()
		<-exited
	})
	awaitCond(t, "the command to start under the lock", func() bool {
		_, err := os.Stat(started)
		return err == nil
	})

	old.signal(syscall.SIGKILL)
	next, _ := leader(t, ms, old, failoverBudget)
	t.Logf("%s killed, %s leads", old.id, next.id)
	awaitRenewal(t, next, "job")
	if got := onLeader(t, ms, old, "l", "job", "0"); got != "timeout" {
		t.Fatalf("try-lock on the new leader: %q, want timeout", got)
	}
	select {
	case <-exited:
		t.Fatalf("dflockctl exited while the command ran: %v\n%s", cmd.ProcessState, stderr.String())
	default:
	}

	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(failoverBudget):
		t.Fatalf("dflockctl did not exit after its command")
	}
	if code := cmd.ProcessState.ExitCode(); code != 7 || stderr.String() != "" {
		t.Fatalf("dflockctl exited %d, want the command's 7, with stderr %q", code, stderr.String())
	}
	if got := onLeader(t, ms, old, "l", "job", "0"); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("try-lock after dflockctl exited: %q, want it released", got)
	}
}
