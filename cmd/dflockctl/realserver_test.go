package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/client"
	"github.com/dflockd-ng/dflockd/internal/testserver"
)

// TestLockAgainstRealServer runs "dflockctl lock" against the dflockd-ng
// binary, so the lock tests also hold against the real server, not only
// the fake.
func TestLockAgainstRealServer(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	env := srv.Env()

	t.Run("no overlap", func(t *testing.T) {
		log := filepath.Join(t.TempDir(), "log")
		script := `echo "start $(date +%s.%N)" >> "$LOG"; sleep 0.2; echo "end $(date +%s.%N)" >> "$LOG"`
		var wg sync.WaitGroup
		results := make([]result, 3)
		for i := range results {
			cmd := start(t, append(env, "LOG="+log), "lock", "shared", "--timeout", "60", "--", "sh", "-c", script)
			wg.Go(func() { results[i] = wait(t, cmd) })
		}
		wg.Wait()
		for i, r := range results {
			expectCode(t, r, 0, "runner "+strconv.Itoa(i))
		}
		b, _ := os.ReadFile(log)
		lines := strings.Fields(strings.TrimSpace(strings.ReplaceAll(string(b), "\n", " ")))
		if len(lines) != 2*2*len(results) {
			t.Fatalf("log:\n%s", b)
		}
		prev := 0.0
		for i := 0; i < len(lines); i += 4 {
			s, _ := strconv.ParseFloat(lines[i+1], 64)
			e, _ := strconv.ParseFloat(lines[i+3], 64)
			if lines[i] != "start" || lines[i+2] != "end" || s < prev || e < s {
				t.Fatalf("overlapping or misordered runs:\n%s", b)
			}
			prev = e
		}
	})

	t.Run("semaphore with --limit", func(t *testing.T) {
		dir := t.TempDir()
		stop := filepath.Join(dir, "stop")
		hold := `touch "$1"; while [ ! -e "$2" ]; do sleep 0.05; done`
		var holders []*exec.Cmd
		for i := range 2 {
			ready := filepath.Join(dir, strconv.Itoa(i))
			holders = append(holders, start(t, env, "lock", "pool", "--limit", "2", "--", "sh", "-c", hold, "sh", ready, stop))
			waitFor(t, "holder "+strconv.Itoa(i), func() bool { return exists(ready) })
		}
		expectCode(t, run(t, env, "lock", "pool", "--limit", "2", "--timeout", "0", "--", "true"), exitBusy, "third holder of two slots")
		expectCode(t, run(t, env, "lock", "pool", "--limit", "3", "--", "true"), exitFailure, "another limit")
		os.WriteFile(stop, nil, 0o644)
		for _, h := range holders {
			expectCode(t, wait(t, h), 0, "holder")
		}
		expectCode(t, run(t, env, "lock", "pool", "--limit", "2", "--timeout", "0", "--", "true"), 0, "a slot after the holders left")
	})

	t.Run("lease renewed and exit status passed", func(t *testing.T) {
		dir := t.TempDir()
		started, stop := filepath.Join(dir, "started"), filepath.Join(dir, "stop")
		// A 3 s lease renewed every 0.5 s (--keepalive): 2.5 s for a
		// stalled machine before a late renewal would really lose it.
		const lease = 3 * time.Second
		cmd := start(t, env, "lock", "long", "--lease", "3", "--keepalive", "0.5", "--", "sh", "-c",
			`touch "$1"; while [ ! -e "$2" ]; do sleep 0.05; done; exit 7`, "sh", started, stop)
		waitFor(t, "the command to start", func() bool { return exists(started) })
		// The lock was granted before the command started: unrenewed, its
		// lease would end by now+lease.
		granted := time.Now()
		probe := dialServer(t, srv)
		// Past the lease: only renewal keeps the lock held that long.
		for until := granted.Add(lease + time.Second); time.Now().Before(until); {
			if _, _, err := client.Acquire(probe, "long", 0); err != client.ErrTimeout {
				t.Fatalf("try-lock while the command runs = %v, want timeout", err)
			}
			time.Sleep(200 * time.Millisecond) // pacing the probes, not synchronisation
		}
		os.WriteFile(stop, nil, 0o644)
		expectCode(t, wait(t, cmd), 7, "lock")
		if _, _, err := client.Acquire(probe, "long", 0); err != nil {
			t.Fatalf("lock not released after the command ended: %v", err)
		}
	})
}

// dialServer connects a test's own client to srv.
func dialServer(t *testing.T, srv *testserver.Server) *client.Conn {
	t.Helper()
	c, err := client.Dial(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
