package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/internal/testserver"
)

// seedPython is the parsing example from the protocol specification,
// verbatim, plus lines that print its results for every argument as JSON.
const seedPython = `
def parse_lock_file(path):
    with open(path) as f:
        info = {}
        for line in f:
            if '=' in line:
                key, value = line.strip().split('=', 1)
                info[key] = value
    return info

import json, sys
print(json.dumps([parse_lock_file(p) for p in sys.argv[1:]]))
`

// seedShell is the protocol specification's shell example, with the path
// taken from $LOCK instead of the hard-coded /tmp/my.lock.
const seedShell = `
echo "pid=$$" > "$LOCK"
echo "timestamp=$(date +%s)" >> "$LOCK"
echo "tag=shell-script" >> "$LOCK"
echo $$
`

func TestFilePythonReadsOurLockFiles(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed: cannot run the protocol's Python parsing example")
	}
	dir := t.TempDir()
	tags := []string{"", "deploy-v1.2.3", "a=b with spaces ✓"}
	var paths []string
	before := time.Now().Unix()
	for i, tag := range tags {
		path := filepath.Join(dir, strconv.Itoa(i)+".lock")
		args := []string{"file", "try", path}
		if tag != "" {
			args = append(args, "--tag", tag)
		}
		expectCode(t, run(t, nil, args...), exitOK, "file try")
		paths = append(paths, path)
	}
	after := time.Now().Unix()

	// One interpreter start for all files: python3 may be a slow shim.
	out, err := exec.Command(python, append([]string{"-c", seedPython}, paths...)...).Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var infos []map[string]string
	if err := json.Unmarshal(out, &infos); err != nil || len(infos) != len(tags) {
		t.Fatalf("python output %q: %v", out, err)
	}
	for i, info := range infos {
		tag := tags[i]
		// dflockctl records its parent (this test process) as holder.
		if info["pid"] != strconv.Itoa(os.Getpid()) {
			t.Errorf("tag %q: python read pid %q, want %d", tag, info["pid"], os.Getpid())
		}
		ts, err := strconv.ParseInt(info["timestamp"], 10, 64)
		if err != nil || ts < before || ts > after {
			t.Errorf("tag %q: python read timestamp %q, want an integer in [%d, %d]", tag, info["timestamp"], before, after)
		}
		if got, ok := info["tag"]; got != tag || ok != (tag != "") {
			t.Errorf("python read tag %q (present %v), want %q", got, ok, tag)
		}
		if len(info) != 2+min(len(tag), 1) {
			t.Errorf("python read extra fields: %v", info)
		}
	}
}

func TestFileShellInterop(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "sh.lock")

	// A fresh lock written by the shell example is honoured…
	shellPID := strings.TrimSpace(sh(t, seedShell, "LOCK="+lock))
	written, _ := os.ReadFile(lock)
	r := run(t, nil, "file", "try", lock)
	expectCode(t, r, exitBusy, "try over fresh shell lock")
	if !strings.Contains(r.stderr, "pid "+shellPID) || !strings.Contains(r.stderr, `"shell-script"`) {
		t.Errorf("busy message %q does not name the shell holder", r.stderr)
	}
	if now, _ := os.ReadFile(lock); string(now) != string(written) {
		t.Fatal("fresh shell lock was modified")
	}
	r = run(t, nil, "file", "status", lock)
	expectCode(t, r, exitOK, "status of fresh shell lock")
	for _, want := range []string{"state=held", "pid=" + shellPID, "tag=shell-script", "stale=false"} {
		if !strings.Contains(r.stdout, want+"\n") {
			t.Errorf("status output lacks %q:\n%s", want, r.stdout)
		}
	}
	// …until it is stale: with --stale 1, acquire's retries must take it
	// over once now - timestamp > 1 s, and not before.
	var shellTS int64
	for _, line := range strings.Split(string(written), "\n") {
		if v, ok := strings.CutPrefix(line, "timestamp="); ok {
			shellTS, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	r = run(t, nil, "file", "acquire", lock, "--stale", "1", "--timeout", "10", "--tag", "ours", "--verbose")
	expectCode(t, r, exitOK, "acquire over aging shell lock")
	if now := time.Now(); !now.After(time.Unix(shellTS+1, 0)) {
		t.Errorf("took over at %v a lock stamped %d with --stale 1", now, shellTS)
	}
	assertHolder(t, lock, os.Getpid(), "ours")

	// The shell releases by rm; a shell lock with an old timestamp is
	// taken over at once with the default stale timeout.
	sh(t, `rm -f "$LOCK"`, "LOCK="+lock)
	sh(t, `echo "pid=$$" > "$LOCK"; echo "timestamp=$(( $(date +%s) - 7200 ))" >> "$LOCK"; echo "tag=crashed" >> "$LOCK"`, "LOCK="+lock)
	expectCode(t, run(t, nil, "file", "status", lock), exitStatusStale, "status of 2 h old lock")
	expectCode(t, run(t, nil, "file", "try", lock), exitOK, "try over 2 h old shell lock")
	assertHolder(t, lock, os.Getpid(), "")

	// And the shell sees our lock the way the protocol says: by existence.
	if out := sh(t, `[ -e "$LOCK" ] && echo locked`, "LOCK="+lock); out != "locked\n" {
		t.Fatalf("shell sees %q", out)
	}
}

func TestFileForeignVariants(t *testing.T) {
	now := time.Now().Unix()
	tests := []struct {
		name, content string
		fresh         bool
	}{
		{"CRLF fresh", fmt.Sprintf("pid=77\r\ntimestamp=%d\r\ntag=win\r\n", now), true},
		{"CRLF stale", fmt.Sprintf("pid=77\r\ntimestamp=%d\r\ntag=win\r\n", now-4000), false},
		{"unknown fields fresh", fmt.Sprintf("owner=ci\npid=77\n\nhost=b1\ntimestamp=%d\n", now), true},
		{"unknown fields stale", fmt.Sprintf("owner=ci\npid=77\n\nhost=b1\ntimestamp=%d\n", now-4000), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lock := writeFile(t, t.TempDir(), "f.lock", tt.content)
			st := run(t, nil, "file", "status", lock)
			if !strings.Contains(st.stdout, "pid=77\n") {
				t.Errorf("status did not read pid:\n%s", st.stdout)
			}
			if tt.fresh {
				expectCode(t, st, exitOK, "status")
				expectCode(t, run(t, nil, "file", "try", lock), exitBusy, "try")
				expectCode(t, run(t, nil, "file", "cleanup", lock), exitBusy, "cleanup")
				return
			}
			expectCode(t, st, exitStatusStale, "status")
			expectCode(t, run(t, nil, "file", "try", lock), exitOK, "try")
			assertHolder(t, lock, os.Getpid(), "")
		})
	}
}

func TestFileReleaseOwnership(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "o.lock")
	expectCode(t, run(t, nil, "file", "try", lock, "--pid", "111"), exitOK, "try")
	r := run(t, nil, "file", "release", lock, "--pid", "222")
	expectCode(t, r, exitNoPerm, "release by another pid")
	if !strings.Contains(r.stderr, "pid 111") {
		t.Errorf("message %q does not name the holder", r.stderr)
	}
	expectCode(t, run(t, nil, "file", "release", lock), exitNoPerm, "release by default pid (ours is not 111)")
	assertHolder(t, lock, 111, "")
	expectCode(t, run(t, nil, "file", "release", lock, "--pid", "111"), exitOK, "release by owner")
	expectCode(t, run(t, nil, "file", "release", lock, "--pid", "111"), exitNoPerm, "release without lock file")
	expectCode(t, run(t, nil, "file", "try", lock, "--pid", "111"), exitOK, "try again")
	expectCode(t, run(t, nil, "file", "release", lock, "--force"), exitOK, "forced release")
	if exists(lock) {
		t.Fatal("forced release left the file")
	}
	// The default pid is the caller's: a shell that acquires can release.
	sh(t, `"$BIN" file acquire "$LOCK" --timeout 5 && "$BIN" file status "$LOCK" | grep -qx "pid=$$" && "$BIN" file release "$LOCK"`,
		"BIN="+binPath, "LOCK="+lock)
	if exists(lock) {
		t.Fatal("shell acquire/release left the file")
	}
}

func TestFileStatusAndCleanup(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "s.lock")
	r := run(t, nil, "file", "status", lock)
	expectCode(t, r, exitStatusFree, "status without file")
	if r.stdout != "path="+lock+"\nstate=free\n" {
		t.Errorf("status output %q", r.stdout)
	}
	expectCode(t, run(t, nil, "file", "cleanup", lock), exitOK, "cleanup without file")
	writeFile(t, dir, "s.lock", fmt.Sprintf("pid=5\ntimestamp=%d\ntag=job 9\n", time.Now().Unix()-30))
	r = run(t, nil, "file", "status", lock)
	expectCode(t, r, exitOK, "status of 30 s old lock")
	for _, want := range []string{"state=held", "pid=5", "tag=job 9", "stale=false"} {
		if !strings.Contains(r.stdout, want+"\n") {
			t.Errorf("status lacks %q:\n%s", want, r.stdout)
		}
	}
	expectCode(t, run(t, nil, "file", "cleanup", lock), exitBusy, "cleanup of fresh lock")
	r = run(t, nil, "file", "status", lock, "--stale", "10")
	expectCode(t, r, exitStatusStale, "status with --stale 10")
	if !strings.Contains(r.stdout, "state=stale\n") || !strings.Contains(r.stdout, "stale=true\n") {
		t.Errorf("status output:\n%s", r.stdout)
	}
	expectCode(t, run(t, nil, "file", "cleanup", lock, "--stale", "10"), exitOK, "cleanup of stale lock")
	if exists(lock) {
		t.Fatal("cleanup left the stale file")
	}
}

func TestFileAcquireTimeout(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "t.lock")
	expectCode(t, run(t, nil, "file", "try", lock, "--pid", "1"), exitOK, "try")
	start := time.Now()
	r := run(t, nil, "file", "acquire", lock, "--timeout", "0.3")
	expectCode(t, r, exitBusy, "acquire of held lock")
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("gave up after %v, before --timeout 0.3", d)
	}
	if !strings.Contains(r.stderr, "timed out") {
		t.Errorf("message %q", r.stderr)
	}
}

func TestFileAcquireInterrupted(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "i.lock")
	expectCode(t, run(t, nil, "file", "try", lock, "--pid", "1", "--tag", "first"), exitOK, "try")
	cmd := start(t, nil, "file", "acquire", lock, "--verbose")
	stderr := cmd.Stderr.(*testserver.Output)
	waitFor(t, "the waiting message", func() bool { return strings.Contains(stderr.String(), "waiting for") })
	if !strings.Contains(stderr.String(), `pid 1, tag "first"`) {
		t.Errorf("waiting message %q does not name the holder", stderr)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	r := wait(t, cmd)
	expectCode(t, r, 128+int(syscall.SIGTERM), "interrupted acquire")
	if !strings.Contains(r.stderr, "interrupted by terminated") {
		t.Errorf("stderr %q", r.stderr)
	}
	assertHolder(t, lock, 1, "first")
}

func TestFileUsageErrors(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "u.lock")
	for _, args := range [][]string{
		{"file"},
		{"file", "try"},
		{"file", "try", lock, lock},
		{"file", "frob", lock},
		{"file", "try", lock, "--timeout", "1"}, // try never waits
		{"file", "try", lock, "--stale", "0"},
		{"file", "try", lock, "--stale", "soon"},
		{"file", "try", lock, "--tag", "two\nlines"},
		{"file", "status", lock, "--force"},
		{"nope"},
		{},
	} {
		expectCode(t, run(t, nil, args...), exitUsage, fmt.Sprintf("%q", args))
	}
	if exists(lock) {
		t.Fatal("a usage error created the lock file")
	}
	expectCode(t, run(t, nil, "file", "try", "-h"), exitOK, "help")
}

// TestFileConcurrentProcesses runs shell workers that each take the lock
// with dflockctl, log enter/leave, and release; the log must show strictly
// alternating enter/leave pairs of the same worker.
func TestFileConcurrentProcesses(t *testing.T) {
	dir := t.TempDir()
	lock, log := filepath.Join(dir, "c.lock"), filepath.Join(dir, "log")
	const workers, rounds = 4, 5
	script := `for i in $(seq ` + strconv.Itoa(rounds) + `); do
  "$BIN" file acquire "$LOCK" --timeout 60 --tag "w$$" || exit 1
  echo "enter $$" >> "$LOG"; sleep 0.02; echo "leave $$" >> "$LOG"
  "$BIN" file release "$LOCK" || exit 2
done`
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			cmd := exec.Command("sh", "-c", script)
			cmd.Env = append(os.Environ(), "BIN="+binPath, "LOCK="+lock, "LOG="+log)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("worker: %v\n%s", err, out)
			}
		})
	}
	wg.Wait()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for ; sc.Scan(); n++ {
		enter := sc.Text()
		if !sc.Scan() {
			t.Fatalf("log ends after %q", enter)
		}
		leave := sc.Text()
		who, ok := strings.CutPrefix(enter, "enter ")
		if !ok || leave != "leave "+who {
			t.Fatalf("overlap: %q followed by %q", enter, leave)
		}
	}
	if n != workers*rounds {
		t.Fatalf("%d critical sections, want %d", n, workers*rounds)
	}
	if exists(lock) {
		t.Fatal("lock file left behind")
	}
}

func assertHolder(t *testing.T, lock string, pid int, tag string) {
	t.Helper()
	b, err := os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("pid=%d\n", pid)
	if !strings.HasPrefix(string(b), want) || (tag != "" && !strings.Contains(string(b), "\ntag="+tag+"\n")) {
		t.Fatalf("lock file %q, want pid %d tag %q", b, pid, tag)
	}
}
