package main

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/cmd/dflockctl/client"
	"github.com/dflockd-ng/dflockd/loop"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// realServer runs dflockd-ng's own loop and engine on a loopback port, so
// the lock tests also hold against the real server, not only the fake.
func realServer(t *testing.T) (addr string, env []string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = l.Addr().String()
	l.Close()
	ready := make(chan struct{})
	clock := timerwheel.NewMonoClock()
	srv := loop.New(loop.Config{Addr: "tcp://" + addr, Loops: 2, Ready: ready}, clock)
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("server: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	})
	host, port, _ := net.SplitHostPort(addr)
	return addr, []string{envHost + "=" + host, envPort + "=" + port}
}

func TestLockAgainstRealServer(t *testing.T) {
	addr, env := realServer(t)

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

	t.Run("lease renewed and exit status passed", func(t *testing.T) {
		dir := t.TempDir()
		started, stop := filepath.Join(dir, "started"), filepath.Join(dir, "stop")
		cmd := start(t, env, "lock", "long", "--lease", "2", "--", "sh", "-c",
			`touch "$1"; while [ ! -e "$2" ]; do sleep 0.05; done; exit 7`, "sh", started, stop)
		waitFor(t, "the command to start", func() bool { return exists(started) })
		probe, err := client.Dial(context.Background(), client.Config{Addr: addr})
		if err != nil {
			t.Fatal(err)
		}
		defer probe.Close()
		// Three lease lengths: only renewal keeps the lock held that long.
		for until := time.Now().Add(6 * time.Second); time.Now().Before(until); {
			if _, err := probe.Lock(context.Background(), "long", 0, 0); !errors.Is(err, client.ErrTimeout) {
				t.Fatalf("try-lock while the command runs = %v, want timeout", err)
			}
			time.Sleep(200 * time.Millisecond) // pacing the probes, not synchronisation
		}
		os.WriteFile(stop, nil, 0o644)
		expectCode(t, wait(t, cmd), 7, "lock")
		if _, err := probe.Lock(context.Background(), "long", 0, 0); err != nil {
			t.Fatalf("lock not released after the command ended: %v", err)
		}
	})
}
