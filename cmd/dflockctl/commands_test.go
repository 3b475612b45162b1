package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dflockd-ng/dflockd/client"
	"github.com/dflockd-ng/dflockd/internal/testserver"
	"github.com/dflockd-ng/dflockd/version"
)

// ctl runs dflockctl against srv (through DFLOCKD_HOST and DFLOCKD_PORT).
func ctl(t *testing.T, srv *testserver.Server, args ...string) result {
	t.Helper()
	return run(t, srv.Env(), args...)
}

// expectOut fails the test unless r exited with code and printed stdout.
func expectOut(t *testing.T, r result, code int, stdout, what string) {
	t.Helper()
	expectCode(t, r, code, what)
	if r.stdout != stdout {
		t.Fatalf("%s: stdout %q, want %q (stderr %q)", what, r.stdout, stdout, r.stderr)
	}
}

// statsEntries returns an array section of the server's stats.
func statsEntries(t *testing.T, c *client.Conn, section string) []map[string]any {
	t.Helper()
	doc, err := client.Stats(c)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &st); err != nil {
		t.Fatal(err)
	}
	var entries []map[string]any
	json.Unmarshal(st[section], &entries)
	return entries
}

// subscribers counts the subscriptions to pattern in a stats section
// (signal_channels: listeners, watch_channels: watchers).
func subscribers(t *testing.T, c *client.Conn, section, pattern string) int {
	n := 0
	for _, e := range statsEntries(t, c, section) {
		if e["pattern"] == pattern {
			for _, f := range []string{"listeners", "watchers"} {
				v, _ := e[f].(float64)
				n += int(v)
			}
		}
	}
	return n
}

func TestKVCommands(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	expectOut(t, ctl(t, srv, "kv", "set", "cfg", "a b"), 0, "ok\n", "kv set")
	expectOut(t, ctl(t, srv, "kv", "get", "cfg"), 0, "a b\n", "kv get")
	expectOut(t, ctl(t, srv, "kv", "get", "cfg", "--json"), 0, `{"key":"cfg","value":"a b"}`+"\n", "kv get --json")
	expectOut(t, ctl(t, srv, "kv", "cas", "cfg", "wrong", "x"), exitBusy, "", "kv cas conflict")
	expectOut(t, ctl(t, srv, "kv", "cas", "cfg", "a b", "x", "--json"), 0, `{"swapped":true}`+"\n", "kv cas")
	expectOut(t, ctl(t, srv, "kv", "cas", "new", "", "created"), 0, "ok\n", "kv cas create")
	expectOut(t, ctl(t, srv, "kv", "del", "cfg"), 0, "ok\n", "kv del")
	r := ctl(t, srv, "kv", "get", "cfg")
	expectOut(t, r, exitAbsent, "", "kv get of a deleted key")
	if !strings.Contains(r.stderr, "no value") {
		t.Fatalf("stderr %q", r.stderr)
	}
	expectOut(t, ctl(t, srv, "--json", "kv", "get", "cfg"), exitAbsent, `{"key":"cfg","value":null}`+"\n", "kv get --json of a deleted key")
	expectOut(t, ctl(t, srv, "kv", "set", "short", "v", "--ttl", "1"), 0, "ok\n", "kv set --ttl")
	probe := dialServer(t, srv)
	waitFor(t, "the TTL to expire", func() bool { _, err := client.KVGet(probe, "short"); return err == client.ErrNotFound })
	expectCode(t, ctl(t, srv, "kv", "set", "k", "tab\there"), exitUsage, "value with a tab")
	expectCode(t, ctl(t, srv, "kv", "get"), exitUsage, "kv get without a key")
	expectCode(t, ctl(t, srv, "kv", "frob", "k"), exitUsage, "unknown kv subcommand")
	expectCode(t, ctl(t, srv, "kv"), exitUsage, "kv alone")
}

func TestCounterCommands(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	expectOut(t, ctl(t, srv, "counter", "get", "hits"), 0, "0\n", "counter get of an absent counter")
	expectOut(t, ctl(t, srv, "counter", "incr", "hits"), 0, "1\n", "counter incr")
	expectOut(t, ctl(t, srv, "counter", "incr", "hits", "10"), 0, "11\n", "counter incr 10")
	expectOut(t, ctl(t, srv, "counter", "decr", "hits", "--", "-4"), 0, "15\n", "counter decr -4")
	expectOut(t, ctl(t, srv, "counter", "set", "hits", "9223372036854775807"), 0, "9223372036854775807\n", "counter set")
	r := ctl(t, srv, "counter", "incr", "hits")
	expectCode(t, r, exitFailure, "counter incr past int64")
	if !strings.Contains(r.stderr, "overflow") {
		t.Fatalf("stderr %q", r.stderr)
	}
	expectOut(t, ctl(t, srv, "counter", "get", "hits", "--json"), 0, `{"key":"hits","value":9223372036854775807}`+"\n", "counter get --json")
	expectCode(t, ctl(t, srv, "counter", "incr", "hits", "1.5"), exitUsage, "non-integer delta")
	expectCode(t, ctl(t, srv, "counter", "set", "hits"), exitUsage, "counter set without a value")
}

func TestListCommands(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, "--compat=rf") // its stats show the pop waiters
	expectOut(t, ctl(t, srv, "list", "push", "q", "b", "c d"), 0, "2\n", "list push")
	expectOut(t, ctl(t, srv, "list", "push", "q", "a", "--left"), 0, "3\n", "list push --left")
	expectOut(t, ctl(t, srv, "list", "range", "q"), 0, "a\nb\nc d\n", "list range")
	expectOut(t, ctl(t, srv, "list", "range", "q", "1", "--json"), 0, `["b","c d"]`+"\n", "list range 1 --json")
	expectOut(t, ctl(t, srv, "list", "range", "q", "0", "0"), 0, "a\n", "list range 0 0")
	expectOut(t, ctl(t, srv, "list", "len", "q", "--json"), 0, `{"key":"q","length":3}`+"\n", "list len --json")
	expectOut(t, ctl(t, srv, "list", "pop", "q", "--right"), 0, "c d\n", "list pop --right")
	expectOut(t, ctl(t, srv, "list", "pop", "q"), 0, "a\n", "list pop")
	expectOut(t, ctl(t, srv, "list", "pop", "q", "--json"), 0, `{"key":"q","value":"b"}`+"\n", "list pop --json")
	expectOut(t, ctl(t, srv, "list", "pop", "q"), exitAbsent, "", "list pop of an empty list")
	expectOut(t, ctl(t, srv, "list", "pop", "q", "--wait", "1"), exitBusy, "", "list pop --wait that runs out")
	expectOut(t, ctl(t, srv, "list", "range", "missing"), 0, "", "list range of a missing list")

	// A waiting pop gets the next push.
	popper := start(t, srv.Env(), "list", "pop", "jobs", "--wait", "30")
	probe := dialServer(t, srv)
	waitFor(t, "the pop to wait", func() bool {
		for _, l := range statsEntries(t, probe, "lists") {
			if l["key"] == "jobs" && l["pop_waiters"] == 1.0 {
				return true
			}
		}
		return false
	})
	expectCode(t, ctl(t, srv, "list", "push", "jobs", "job-1"), 0, "list push to a waiting pop")
	expectOut(t, wait(t, popper), 0, "job-1\n", "list pop --wait")
	expectCode(t, ctl(t, srv, "list", "range", "q", "x"), exitUsage, "bad index")
	expectCode(t, ctl(t, srv, "list", "push", "q"), exitUsage, "push without a value")
}

func TestSignalAndListen(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, "--compat=rf") // its stats show the subscriptions
	probe := dialServer(t, srv)
	listener := start(t, srv.Env(), "listen", "orders.*", "--count", "2")
	jsonListener := start(t, srv.Env(), "--json", "listen", "orders.>", "--count", "1", "--group", "billing")
	waitFor(t, "the subscriptions", func() bool {
		return subscribers(t, probe, "signal_channels", "orders.*") == 1 && subscribers(t, probe, "signal_channels", "orders.>") == 1
	})
	expectOut(t, ctl(t, srv, "signal", "orders.new", "id", "42"), 0, "2\n", "signal to a listener and a group")
	expectOut(t, wait(t, jsonListener), 0, `{"channel":"orders.new","payload":"id 42"}`+"\n", "listen --json --group")
	// Its subscription ends with its connection.
	waitFor(t, "the group listener to leave", func() bool { return subscribers(t, probe, "signal_channels", "orders.>") == 0 })
	expectOut(t, ctl(t, srv, "signal", "orders.old", "x", "--json"), 0, `{"receivers":1}`+"\n", "signal --json")
	expectOut(t, wait(t, listener), 0, "orders.new id 42\norders.old x\n", "listen --count 2")
	expectOut(t, ctl(t, srv, "signal", "nobody", "x"), 0, "0\n", "signal without listeners")
	r := ctl(t, srv, "listen", "quiet", "--count", "1", "--timeout", "0.5")
	expectOut(t, r, exitBusy, "", "listen whose count is not reached in time")
	expectOut(t, ctl(t, srv, "listen", "quiet", "--timeout", "0.3"), 0, "", "listen without --count until the timeout")
	expectCode(t, ctl(t, srv, "signal", "a.*", "x"), exitUsage, "signal to a pattern")
	expectCode(t, ctl(t, srv, "listen"), exitUsage, "listen without a pattern")
}

func TestWatchCommand(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, "--compat=rf") // its stats show the watches
	probe := dialServer(t, srv)
	watcher := start(t, srv.Env(), "watch", "cfg.*", "jobs", "--count", "3")
	waitFor(t, "the watches", func() bool {
		return subscribers(t, probe, "watch_channels", "cfg.*") == 1 && subscribers(t, probe, "watch_channels", "jobs") == 1
	})
	client.KVSet(probe, "cfg.db", "x", 0)
	client.Incr(probe, "jobs", 1)
	client.KVSet(probe, "other", "x", 0)
	client.RPush(probe, "jobs", "x")
	expectOut(t, wait(t, watcher), 0, "kset cfg.db\nincr jobs\nrpush jobs\n", "watch")
	jsonWatcher := start(t, srv.Env(), "watch", "k", "--count", "1", "--json")
	waitFor(t, "the watch", func() bool { return subscribers(t, probe, "watch_channels", "k") == 1 })
	client.KVDel(probe, "k")
	expectOut(t, wait(t, jsonWatcher), 0, `{"event":"kdel","key":"k"}`+"\n", "watch --json")
}

func TestElectAndObserve(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	dir := t.TempDir()
	ready, stop := filepath.Join(dir, "ready"), filepath.Join(dir, "stop")
	leader := start(t, srv.Env(), "elect", "primary", "--lease", "1", "--", "sh", "-c",
		`echo "$DFLOCKCTL_KEY" > "$1"; while [ ! -e "$2" ]; do sleep 0.05; done; exit 5`, "sh", ready, stop)
	waitFor(t, "the leader's command", func() bool { return exists(ready) })
	// Observing a led election reports elected at once: that is how we
	// know the observer is subscribed before the leader resigns.
	observer := start(t, srv.Env(), "observe", "primary", "--count", "2")
	waitFor(t, "the elected event", func() bool { return observer.Stdout.(*testserver.Output).String() != "" })
	expectCode(t, ctl(t, srv, "elect", "primary", "--timeout", "0", "--", "true"), exitBusy, "a second candidate, no wait")
	os.WriteFile(stop, nil, 0o644)
	expectCode(t, wait(t, leader), 5, "elect passes the command's status")
	expectOut(t, wait(t, observer), 0, "elected primary\nresigned primary\n", "observe")
	expectOut(t, ctl(t, srv, "--json", "observe", "primary", "--timeout", "0.3"), 0, "", "observe of a leaderless election")
	expectCode(t, ctl(t, srv, "elect", "primary"), exitUsage, "elect without a command")
}

func TestBarrierCommand(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	var wg sync.WaitGroup
	results := make([]result, 3)
	for i := range results {
		cmd := start(t, srv.Env(), "barrier", "go", "3", "--timeout", "30", "--json")
		wg.Go(func() { results[i] = wait(t, cmd) })
	}
	wg.Wait()
	for i, r := range results {
		expectOut(t, r, 0, `{"tripped":true}`+"\n", fmt.Sprint("participant ", i))
	}
	r := ctl(t, srv, "barrier", "alone", "2", "--timeout", "1")
	expectCode(t, r, exitBusy, "barrier alone")
	if !strings.Contains(r.stderr, "timed out") {
		t.Fatalf("stderr %q", r.stderr)
	}
	expectCode(t, ctl(t, srv, "barrier", "b", "0"), exitUsage, "barrier count 0")
}

func TestRawPingStatsVersion(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	expectOut(t, ctl(t, srv, "raw", "incr", "n", "5"), 0, "ok 5\n", "raw incr")
	expectOut(t, ctl(t, srv, "raw", "kset", "greeting", "hello", "world"), 0, "ok\n", "raw kset with a spaced value")
	expectOut(t, ctl(t, srv, "raw", "kget", "greeting", "--json"), 0, `{"reply":"ok hello world"}`+"\n", "raw --json")
	expectOut(t, ctl(t, srv, "raw", "bogus"), 0, "error\n", "raw of an unknown command")
	expectOut(t, ctl(t, srv, "raw", "--", "incr", "n", "-2"), 0, "ok 3\n", "raw with a negative argument")
	expectOut(t, ctl(t, srv, "ping"), 0, "ok\n", "ping")
	expectOut(t, ctl(t, srv, "ping", "--json"), 0, `{"ok":true}`+"\n", "ping --json")
	// The stats table of the v2 document (five keys), then of the rf one,
	// which shows counters.
	r := ctl(t, srv, "stats")
	expectCode(t, r, 0, "stats")
	if !strings.Contains(r.stdout, "connections: 1\n") || strings.Contains(r.stdout, "counters") {
		t.Fatalf("v2 stats table:\n%s", r.stdout)
	}
	srv = testserver.Start(t, "--compat=rf")
	expectOut(t, ctl(t, srv, "raw", "incr", "n", "5"), 0, "ok 5\n", "raw incr (rf)")
	r = ctl(t, srv, "stats")
	if !strings.Contains(r.stdout, "connections: 1\n") || !strings.Contains(r.stdout, "counters:\n  KEY  IDLE_S  VALUE\n  n ") {
		t.Fatalf("rf stats table:\n%s", r.stdout)
	}
	r = ctl(t, srv, "stats", "--json")
	var doc struct{ Counters []struct{ Key string } }
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Counters) != 1 {
		t.Fatalf("stats --json %q: %v", r.stdout, err)
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		r := run(t, nil, args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "dflockctl "+version.String()+" (revision "+version.Revision()+", go") {
			t.Fatalf("%v: %d %q", args, r.code, r.stdout)
		}
	}
	r = run(t, nil, "version", "--json")
	var v map[string]string
	if json.Unmarshal([]byte(r.stdout), &v) != nil || v["version"] != version.String() || v["revision"] != version.Revision() {
		t.Fatalf("version --json: %q", r.stdout)
	}
}

// TestGlobalOptionsEitherSide gives each global option before and after
// the command's name, and checks a later one overrides an earlier one.
func TestGlobalOptionsEitherSide(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, "--auth-token", "s3cret")
	addr := srv.Addr()
	for _, args := range [][]string{
		{"--server", addr, "--auth-token", "s3cret", "--json", "counter", "incr", "n"},
		{"counter", "incr", "n", "--server", addr, "--auth-token", "s3cret", "--json"},
		{"--server", addr, "counter", "--json", "incr", "--auth-token=s3cret", "n"},
		{"--server", "127.0.0.1:1", "--auth-token", "wrong", "counter", "incr", "n", "--server", addr, "--auth-token", "s3cret", "--json"},
	} {
		r := run(t, nil, args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, `{"key":"n","value":`) {
			t.Fatalf("%q: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
	// The command line of issue #13: options before "lock".
	expectCode(t, run(t, nil, "--server", addr, "--auth-token", "s3cret", "lock", "k", "--", "true"), 0, "options before lock")
	tokenFile := writeFile(t, t.TempDir(), "token", "s3cret\n")
	expectOut(t, run(t, nil, "--auth-token-file", tokenFile, "ping", "--server", addr), 0, "ok\n", "token file before, server after")
	expectCode(t, run(t, nil, "ping", "--server", addr), exitNoPerm, "no token")
	expectCode(t, run(t, nil, "--auth-token", "wrong", "ping", "--server", addr), exitNoPerm, "wrong token")
	expectCode(t, run(t, nil, "--bogus", "ping"), exitUsage, "unknown global option")
	expectCode(t, run(t, nil, "--server"), exitUsage, "global option without a value")
}

func TestShardsAndCluster(t *testing.T) {
	t.Parallel()
	a, b := testserver.Start(t), testserver.Start(t)
	keys := map[int]string{}
	for i := 0; len(keys) < 2; i++ {
		k := fmt.Sprint("key", i)
		keys[client.CRC32Shard(k, 2)] = k
	}
	servers := a.Addr() + "," + b.Addr()
	for shard, k := range keys {
		expectOut(t, run(t, nil, "--server", servers, "counter", "incr", k), 0, "1\n", "sharded incr")
		probe := dialServer(t, []*testserver.Server{a, b}[shard])
		if v, err := client.GetCounter(probe, k); err != nil || v != 1 {
			t.Fatalf("key %s not on shard %d: %d, %v", k, shard, v, err)
		}
	}

	// A follower that refuses with error_not_leader naming b: with
	// --cluster the request is redirected to b, a listed member.
	follower := notLeader(t, b.Addr())
	members := follower + "," + b.Addr()
	expectOut(t, run(t, nil, "--cluster", "--server", members, "counter", "incr", "via-follower"), 0, "1\n", "redirected incr")
	probe := dialServer(t, b)
	if v, _ := client.GetCounter(probe, "via-follower"); v != 1 {
		t.Fatalf("the redirected incr did not reach the leader: %d", v)
	}
	r := run(t, nil, "--server", follower, "counter", "incr", "x")
	expectCode(t, r, exitUnavailable, "no --cluster: no redirect")
	if !strings.Contains(r.stderr, "leader is "+b.Addr()) {
		t.Fatalf("stderr %q does not name the leader", r.stderr)
	}
	expectCode(t, run(t, nil, "--cluster", "--server", follower, "counter", "incr", "x"), exitUnavailable, "leader not a member")
}

// TestExitCodesDocumented: every exit code of exitcode.go has a row in the
// README's table.
func TestExitCodesDocumented(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []int{exitOK, exitFailure, exitUsage, exitAbsent, exitStatusStale, exitUnavailable,
		exitBusy, exitNoPerm, exitCannotRun, exitNotFound} {
		if !strings.Contains(string(readme), fmt.Sprintf("\n| %d |", code)) {
			t.Errorf("exit code %d missing from README.md's table", code)
		}
	}
	if !strings.Contains(string(readme), "\n| 128+N |") {
		t.Error("128+N missing from README.md's table")
	}
}

func TestUsageAndHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"bogus"}, {"kv"}, {"counter", "x"}, {"list", "push"}, {"raw"}, {"completion", "fish"}, {"version", "x"}} {
		expectCode(t, run(t, nil, args...), exitUsage, fmt.Sprintf("%q", args))
	}
	r := run(t, nil) // no command and no terminal: usage
	expectCode(t, r, exitUsage, "no command")
	for _, args := range [][]string{{"--help"}, {"help"}, {"kv", "-h"}, {"listen", "--help"}, {"lock", "-h"}, {"elect", "-h"}, {"completion", "-h"}} {
		r := run(t, nil, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "usage:") {
			t.Fatalf("%q: exit %d, stdout %q", args, r.code, r.stdout)
		}
	}
	r = run(t, nil, "--help")
	for _, cmd := range commandNames(false) {
		if !strings.Contains(r.stdout, cmd) {
			t.Errorf("usage does not mention %s", cmd)
		}
	}
	if !slices.Contains(commandNames(true), "kv") || slices.Contains(commandNames(true), "lock") {
		t.Error("commandNames(true) is not the prompt's set")
	}
}
