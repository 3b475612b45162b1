package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// jsonLines parses every line of buf as one JSON object, failing the test
// on any that is not.
func jsonLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a log line is not JSON: %q: %v", line, err)
		}
		out = append(out, m)
	}
	buf.Reset()
	return out
}

// jsonLog is a slog logger writing JSON at level into a buffer.
func jsonLog(level slog.Level) (*slog.Logger, *bytes.Buffer) {
	buf := new(bytes.Buffer)
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: level})), buf
}

// The adapter writes hclog's calls as slog records: levels mapped, the
// subsystem as component, the arguments as attributes, hclog's value
// types rendered as hclog renders them.
func TestRaftLoggerWritesThroughSlog(t *testing.T) {
	log, buf := jsonLog(slog.LevelDebug)
	l := RaftLogger(log, hclog.Debug)

	l.Warn("failed to contact", "server-id", "n2", "error", errors.New("connection refused"),
		"took", hclog.Fmt("%dms", 12), "flags", hclog.Hex(255))
	l.Named("wal").Info("segment rotated", "id", 3)
	l.With("peer", "n3").Error("append failed", "dangling")
	l.Debug("debug line")
	l.Trace("trace line") // below the Debug floor: dropped
	l.Log(hclog.Off, "never")

	got := jsonLines(t, buf)
	if len(got) != 4 {
		t.Fatalf("%d lines, want 4 (the trace and Off lines dropped): %v", len(got), got)
	}
	want := []map[string]any{
		{"level": "WARN", "msg": "failed to contact", "component": "raft", "server-id": "n2",
			"error": "connection refused", "took": "12ms", "flags": "0xff"},
		{"level": "INFO", "msg": "segment rotated", "component": "raft.wal", "id": float64(3)},
		{"level": "ERROR", "msg": "append failed", "component": "raft", "peer": "n3", "EXTRA_VALUE_AT_END": "dangling"},
		{"level": "DEBUG", "msg": "debug line", "component": "raft"},
	}
	for i, w := range want {
		if _, ok := got[i]["time"]; !ok {
			t.Errorf("line %d has no time: %v", i, got[i])
		}
		for k, v := range w {
			if got[i][k] != v {
				t.Errorf("line %d: %s = %#v, want %#v (line %v)", i, k, got[i][k], v, got[i])
			}
		}
	}
}

// The level floor drops lines before they are formatted; it is shared by
// the loggers derived from one another (hclog's SetLevel contract); and
// the slog handler's own level still applies beneath it.
func TestRaftLoggerLevels(t *testing.T) {
	log, buf := jsonLog(slog.LevelInfo)
	l := RaftLogger(log, hclog.Warn)
	sub := l.Named("wal").With("k", "v")
	if l.IsInfo() || sub.IsInfo() || !l.IsWarn() || !sub.IsError() {
		t.Fatalf("floor Warn: IsInfo %v/%v, IsWarn %v, IsError %v", l.IsInfo(), sub.IsInfo(), l.IsWarn(), sub.IsError())
	}
	sub.Info("entering follower state")
	if buf.Len() != 0 {
		t.Fatalf("an Info line passed the Warn floor: %s", buf)
	}
	l.SetLevel(hclog.Trace)
	if !sub.IsInfo() || sub.GetLevel() != hclog.Trace {
		t.Fatal("SetLevel on the root did not reach a derived logger")
	}
	// The handler enables Info and up: Trace and Debug stay off.
	if sub.IsDebug() || sub.IsTrace() {
		t.Fatal("Debug enabled although the slog handler logs from Info")
	}
	sub.Debug("heartbeat")
	sub.Info("entering follower state")
	got := jsonLines(t, buf)
	if len(got) != 1 || got[0]["msg"] != "entering follower state" || got[0]["k"] != "v" {
		t.Fatalf("got %v, want the one Info line with k=v", got)
	}
}

// StandardWriter takes the lines of an hclog logger of raft's own making
// (the file snapshot store makes one on the io.Writer it is handed) and
// logs them at their level under their subsystem, in slog's format.
func TestRaftLoggerStandardWriter(t *testing.T) {
	log, buf := jsonLog(slog.LevelDebug)
	l := RaftLogger(log, hclog.Debug)
	w := l.StandardWriter(&hclog.StandardLoggerOptions{})
	snaps := hclog.New(&hclog.LoggerOptions{Name: "snapshot", Output: w, Level: hclog.Info})
	snaps.Error("failed to reap snapshot", "path", "/var/lib/dflockd/snapshots/2-10")
	snaps.Info("creating new snapshot")
	if _, err := w.Write([]byte("a line of no known form\n")); err != nil {
		t.Fatal(err)
	}
	got := jsonLines(t, buf)
	if len(got) != 3 {
		t.Fatalf("%d lines, want 3: %v", len(got), got)
	}
	if got[0]["level"] != "ERROR" || got[0]["component"] != "raft.snapshot" ||
		!strings.HasPrefix(got[0]["msg"].(string), "failed to reap snapshot") ||
		!strings.Contains(got[0]["msg"].(string), "path=/var/lib/dflockd/snapshots/2-10") {
		t.Errorf("the snapshot store's error: %v", got[0])
	}
	if got[1]["level"] != "INFO" || got[1]["msg"] != "creating new snapshot" || got[1]["component"] != "raft.snapshot" {
		t.Errorf("the snapshot store's info: %v", got[1])
	}
	if got[2]["level"] != "INFO" || got[2]["msg"] != "a line of no known form" || got[2]["component"] != "raft" {
		t.Errorf("a plain line: %v", got[2])
	}
	// A forced level wins over the line's.
	fw := l.StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn})
	if _, err := fw.Write([]byte("2026-01-02T15:04:05.000Z [INFO]  raft: x\n")); err != nil {
		t.Fatal(err)
	}
	if got := jsonLines(t, buf); len(got) != 1 || got[0]["level"] != "WARN" || got[0]["msg"] != "x" || got[0]["component"] != "raft" {
		t.Errorf("forced Warn: %v", got)
	}
}

// A warning or error raft repeats about one peer (a dead member's failed
// heartbeats, twice a second) is logged once per window, the next one
// with the count of those left out; another peer or message is its own;
// Info lines are never held back.
func TestRaftLoggerRepeatsLimited(t *testing.T) {
	log, buf := jsonLog(slog.LevelDebug)
	clock := time.Unix(1000, 0)
	l := RaftLogger(log, hclog.Info).(*raftLogger)
	l.repeats = newRepeatLimiter(30*time.Second, func() time.Time { return clock })
	w := l.Named("wal") // derived loggers share the limiter
	for range 70 {
		l.Error("failed to heartbeat to", "peer", "n2", "error", "connection refused")
		w.Warn("failed to appendEntries to", "peer", "n2")
		l.Error("failed to heartbeat to", "peer", "n3")
		l.Info("entering candidate state", "node", "n1")
		clock = clock.Add(500 * time.Millisecond) // raft's retry pace
	}
	lines := jsonLines(t, buf)
	count := map[string]int{}
	var resumed []float64
	for _, m := range lines {
		count[m["msg"].(string)+"/"+fmt.Sprint(m["peer"])]++
		if n, ok := m["repeats_suppressed"].(float64); ok {
			resumed = append(resumed, n)
		}
	}
	// 70 tries over 35 s: the first, and the first after the window.
	if count["failed to heartbeat to/n2"] != 2 || count["failed to appendEntries to/n2"] != 2 || count["failed to heartbeat to/n3"] != 2 {
		t.Fatalf("repeated lines logged: %v", count)
	}
	if count["entering candidate state/<nil>"] != 70 {
		t.Fatalf("info lines: %d, want all 70", count["entering candidate state/<nil>"])
	}
	if len(resumed) != 3 || resumed[0] != 59 {
		t.Fatalf("repeats_suppressed on the lines after the window: %v, want 59 each", resumed)
	}
}
