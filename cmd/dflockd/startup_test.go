package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/internal/testport"
	"github.com/dflockd-ng/dflockd/internal/testserver"
)

// A port in use and a host that is no address of this machine are refused
// with the system's reason, and nothing claims to be listening.
func TestBindErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--port", port}, "address already in use"},
		{[]string{"--host", "999.1.1.1", "--port", port}, "999.1.1.1"},
		{[]string{"--host", "192.0.2.1", "--port", port}, "cannot assign requested address"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(c.args, &stdout, &stderr); code != 1 {
			t.Errorf("%v: exit %d, want 1; stderr:\n%s", c.args, code, &stderr)
		}
		log := stderr.String()
		if !strings.Contains(log, c.want) || strings.Contains(log, "listening") {
			t.Errorf("%v: log lacks %q or says listening:\n%s", c.args, c.want, log)
		}
	}
}

// --help goes to stdout with exit 0.
func TestHelpOnStdout(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--help"}, &stdout, &stderr); code != 0 || stderr.Len() != 0 ||
		!strings.HasPrefix(stdout.String(), "Usage: dflockd [flags]\n") {
		t.Fatalf("--help: exit %d, stdout %.40q, stderr %q", code, stdout.String(), stderr.String())
	}
}

// Listening beyond loopback with no auth and no caps warns about each;
// loopback does not; --log-format json writes one JSON object per line.
func TestStartupWarningsAndJSONLog(t *testing.T) {
	bin := binary(t)
	start := func(args ...string) string {
		t.Helper()
		port := strconv.Itoa(testport.Port(t))
		cmd := exec.Command(bin, append([]string{"--port", port, "--log-format", "json"}, args...)...)
		var log testserver.Output
		cmd.Stderr = &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(log.String(), `"msg":"listening"`) {
			if time.Now().After(deadline) {
				t.Fatalf("not listening after 10 s:\n%s", log.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		return log.String()
	}
	lines := func(log string) []map[string]any {
		var out []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("log line is not JSON: %q", l)
			}
			out = append(out, m)
		}
		return out
	}
	warned := func(log, what string) bool {
		for _, m := range lines(log) {
			if m["level"] == "WARN" && (m["flag"] == what || strings.Contains(m["msg"].(string), what)) {
				return true
			}
		}
		return false
	}
	wide := start("--host", "0.0.0.0")
	for _, w := range []string{"no auth token", "--max-connections", "--max-connections-per-ip", "--max-waiters"} {
		if !warned(wide, w) {
			t.Errorf("no warning about %q on 0.0.0.0:\n%s", w, wide)
		}
	}
	capped := start("--host", "0.0.0.0", "--auth-token", "s3cret", "--max-connections", "100",
		"--max-connections-per-ip", "10", "--max-waiters", "1000")
	for _, m := range lines(capped) {
		if m["level"] == "WARN" {
			t.Errorf("warning with auth and every cap set: %v", m)
		}
	}
	local := start()
	for _, m := range lines(local) {
		if m["level"] == "WARN" {
			t.Errorf("warning on loopback: %v", m)
		}
	}
}
