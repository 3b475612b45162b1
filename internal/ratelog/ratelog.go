// Package ratelog bounds how many lines a flood of per-client events can
// write to the log: auth failures, connections refused by a cap, protocol
// errors. A client that sends garbage a million times a second must not
// fill the operator's disk, yet the first lines of an incident, and a
// count of what was dropped, must get through.
package ratelog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Logger passes at most burst lines at once and perSecond lines a second
// on average (a token bucket); the lines over the budget are counted, and
// the next line that passes is preceded by one saying how many were
// dropped. Safe for concurrent use; a nil *Logger logs nothing.
type Logger struct {
	log       *slog.Logger
	perSecond float64
	burst     float64
	now       func() time.Time

	mu      sync.Mutex
	tokens  float64
	last    time.Time
	dropped uint64
}

// New returns a Logger writing to log.
func New(log *slog.Logger, perSecond float64, burst int) *Logger {
	return &Logger{log: log, perSecond: perSecond, burst: float64(burst), tokens: float64(burst), now: time.Now}
}

// Log writes a line at level unless the budget is spent.
func (l *Logger) Log(level slog.Level, msg string, args ...any) {
	if l == nil || !l.log.Enabled(context.Background(), level) {
		return
	}
	l.mu.Lock()
	now := l.now()
	if !l.last.IsZero() {
		l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.perSecond)
	}
	l.last = now
	if l.tokens < 1 {
		l.dropped++
		l.mu.Unlock()
		return
	}
	l.tokens--
	dropped := l.dropped
	l.dropped = 0
	l.mu.Unlock()
	if dropped > 0 {
		l.log.Warn("log lines dropped: too many client events", "dropped", dropped)
	}
	l.log.Log(context.Background(), level, msg, args...)
}

// Warn logs at slog.LevelWarn.
func (l *Logger) Warn(msg string, args ...any) { l.Log(slog.LevelWarn, msg, args...) }

// Info logs at slog.LevelInfo.
func (l *Logger) Info(msg string, args ...any) { l.Log(slog.LevelInfo, msg, args...) }
