package ratelog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestBurstThenRateThenDroppedCount(t *testing.T) {
	var buf bytes.Buffer
	l := New(slog.New(slog.NewTextHandler(&buf, nil)), 2, 3)
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	for range 10 {
		l.Warn("auth failed", "remote", "10.0.0.1")
	}
	if n := strings.Count(buf.String(), "auth failed"); n != 3 {
		t.Fatalf("%d lines passed a burst of 3:\n%s", n, buf.String())
	}
	now = now.Add(time.Second) // two more tokens
	l.Warn("auth failed", "remote", "10.0.0.2")
	out := buf.String()
	if n := strings.Count(out, "auth failed"); n != 4 {
		t.Fatalf("%d lines after a second at 2/s, want 4:\n%s", n, out)
	}
	if !strings.Contains(out, "dropped=7") {
		t.Fatalf("no count of the 7 dropped lines:\n%s", out)
	}
	buf.Reset()
	l.Warn("auth failed")
	if strings.Contains(buf.String(), "dropped") {
		t.Fatalf("dropped count repeated:\n%s", buf.String())
	}
	var nl *Logger
	nl.Warn("nothing") // a nil Logger is silent
}

func TestDisabledLevelCostsNoToken(t *testing.T) {
	var buf bytes.Buffer
	l := New(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})), 1, 1)
	l.now = func() time.Time { return time.Unix(0, 0) }
	l.Info("protocol error")
	l.Warn("auth failed")
	if got := buf.String(); !strings.Contains(got, "auth failed") || strings.Contains(got, "protocol error") {
		t.Fatalf("log: %s", got)
	}
}
