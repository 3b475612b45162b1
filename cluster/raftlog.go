package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// RaftLogger returns an hclog.Logger that writes hashicorp/raft's (and
// raft-wal's, and the snapshot store's) lines through log, so that the
// process writes one format: the server's slog handler's, text or JSON,
// instead of hclog's own beside it. go-hclog v1.6 has no slog bridge of
// its own (its InterceptLogger still formats every line for its own
// output, and hands its sinks every level), hence this small adapter.
//
// Each line carries component=raft (raft.wal, raft.snapshot for the
// subsystems hclog names), and hclog's key/value arguments as slog
// attributes. hclog's Trace and Debug map to slog's Debug. Lines below
// level are dropped before anything is formatted, as are the levels log's
// handler does not enable.
func RaftLogger(log *slog.Logger, level hclog.Level) hclog.Logger {
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	l := &raftLogger{base: log, name: "raft", level: new(atomic.Int32), repeats: newRepeatLimiter(repeatWindow, time.Now)}
	l.level.Store(int32(level))
	l.log = l.derive()
	return l
}

// raftLogger is RaftLogger's hclog.Logger. Loggers made from one another
// (Named, With) share their level, as hclog's SetLevel wants.
type raftLogger struct {
	base    *slog.Logger // the server's log
	log     *slog.Logger // base with the component and the implied attributes
	name    string
	implied []any // With's arguments, hclog's form
	level   *atomic.Int32
	repeats *repeatLimiter // shared by every logger made from one another
}

var _ hclog.Logger = (*raftLogger)(nil)

// derive is base with l's component and implied attributes.
func (l *raftLogger) derive() *slog.Logger {
	attrs := make([]any, 0, 1+len(l.implied)/2)
	attrs = append(attrs, slog.String("component", l.name))
	for _, a := range hclogAttrs(l.implied) {
		attrs = append(attrs, a)
	}
	return l.base.With(attrs...)
}

// slogLevel maps hclog's levels onto slog's: slog has no Trace.
func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace, hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo // Info, and NoLevel as hclog treats it
}

func (l *raftLogger) enabled(level hclog.Level) bool {
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	return level < hclog.Off && level >= hclog.Level(l.level.Load()) &&
		l.log.Enabled(context.Background(), slogLevel(level))
}

func (l *raftLogger) Log(level hclog.Level, msg string, args ...any) {
	if !l.enabled(level) {
		return
	}
	attrs := hclogAttrs(args)
	if level >= hclog.Warn && l.repeats != nil {
		// A member that cannot reach a peer says so on every retry,
		// twice a second for as long as the peer is gone: once per
		// window is enough, with the count of the lines left out.
		ok, suppressed := l.repeats.allow(msg, peerOf(args))
		if !ok {
			return
		}
		if suppressed > 0 {
			attrs = append(attrs, slog.Int("repeats_suppressed", suppressed))
		}
	}
	l.log.LogAttrs(context.Background(), slogLevel(level), msg, attrs...)
}

func (l *raftLogger) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }
func (l *raftLogger) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }
func (l *raftLogger) Info(msg string, args ...any)  { l.Log(hclog.Info, msg, args...) }
func (l *raftLogger) Warn(msg string, args ...any)  { l.Log(hclog.Warn, msg, args...) }
func (l *raftLogger) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

func (l *raftLogger) IsTrace() bool { return l.enabled(hclog.Trace) }
func (l *raftLogger) IsDebug() bool { return l.enabled(hclog.Debug) }
func (l *raftLogger) IsInfo() bool  { return l.enabled(hclog.Info) }
func (l *raftLogger) IsWarn() bool  { return l.enabled(hclog.Warn) }
func (l *raftLogger) IsError() bool { return l.enabled(hclog.Error) }

func (l *raftLogger) ImpliedArgs() []any { return l.implied }

func (l *raftLogger) With(args ...any) hclog.Logger {
	c := *l
	c.implied = append(append([]any(nil), l.implied...), args...)
	c.log = c.derive()
	return &c
}

func (l *raftLogger) Name() string { return l.name }

// Named appends to the name, as hclog does: raft-wal's "wal" under
// "raft" is "raft.wal".
func (l *raftLogger) Named(name string) hclog.Logger {
	if l.name != "" {
		name = l.name + "." + name
	}
	return l.ResetNamed(name)
}

func (l *raftLogger) ResetNamed(name string) hclog.Logger {
	c := *l
	c.name = name
	c.log = c.derive()
	return &c
}

func (l *raftLogger) SetLevel(level hclog.Level) { l.level.Store(int32(level)) }
func (l *raftLogger) GetLevel() hclog.Level      { return hclog.Level(l.level.Load()) }

func (l *raftLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(l.StandardWriter(opts), "", 0)
}

// StandardWriter takes lines an hclog logger of its own formatted (raft's
// file snapshot store makes one on the io.Writer it is given) or a
// log.Logger wrote, and logs each through l.
func (l *raftLogger) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	w := &lineWriter{l: l}
	if opts != nil {
		w.force = opts.ForceLevel
	}
	return w
}

// lineWriter is StandardWriter's io.Writer: one write is one line or
// more, each logged on its own.
type lineWriter struct {
	l     *raftLogger
	force hclog.Level // NoLevel: read from the line
}

func (w *lineWriter) Write(p []byte) (int, error) {
	for line := range bytes.SplitSeq(p, []byte{'\n'}) {
		if s := strings.TrimSpace(string(line)); s != "" {
			w.logLine(s)
		}
	}
	return len(p), nil
}

// logLine logs one line of hclog's text format,
//
//	2026-01-02T15:04:05.000Z [INFO]  snapshot: creating new snapshot: path=…
//
// at its level and under its subsystem's name; its key=value pairs stay
// in the message (hclog's quoting is not worth parsing back). A line in
// another form is logged whole, at Info.
func (w *lineWriter) logLine(s string) {
	level, l := hclog.Info, w.l
	if i := strings.Index(s, "["); i >= 0 && isTimestamp(s[:i]) {
		if j := strings.IndexByte(s[i:], ']'); j > 0 {
			if lv, ok := levelNames[s[i+1:i+j]]; ok {
				level, s = lv, strings.TrimSpace(s[i+j+1:])
			}
		}
	}
	// "snapshot: creating new snapshot": a name without blanks before
	// the first colon is the subsystem.
	if name, rest, ok := strings.Cut(s, ": "); ok && name != "" && !strings.ContainsAny(name, " \t=") {
		s = rest
		if !strings.HasSuffix("."+l.name, "."+name) { // "raft: …" under raft is raft's
			l = l.Named(name).(*raftLogger)
		}
	}
	if w.force != hclog.NoLevel {
		level = w.force
	}
	l.Log(level, s)
}

// levelNames are the level tags of hclog's text format.
var levelNames = map[string]hclog.Level{
	"TRACE": hclog.Trace, "DEBUG": hclog.Debug, "INFO": hclog.Info,
	"WARN": hclog.Warn, "ERROR": hclog.Error, "ERR": hclog.Error,
}

// isTimestamp reports whether s is made of what timestamps are made of
// (hclog's is RFC 3339 with milliseconds): the text before a level tag.
func isTimestamp(s string) bool {
	for _, c := range s {
		if !strings.ContainsRune("0123456789 -:.+TZ/", c) {
			return false
		}
	}
	return true
}

// hclogAttrs turns hclog's alternating keys and values into slog
// attributes, rendering hclog's value types as hclog would. A last key
// without a value is kept as hclog keeps it.
func hclogAttrs(args []any) []slog.Attr {
	if len(args) == 0 {
		return nil
	}
	attrs := make([]slog.Attr, 0, (len(args)+1)/2)
	for i := 0; i < len(args); i += 2 {
		if i+1 == len(args) {
			attrs = append(attrs, slog.Any("EXTRA_VALUE_AT_END", hclogValue(args[i])))
			break
		}
		key, ok := args[i].(string)
		if !ok {
			key = fmt.Sprint(args[i])
		}
		attrs = append(attrs, slog.Any(key, hclogValue(args[i+1])))
	}
	return attrs
}

func hclogValue(v any) any {
	switch v := v.(type) {
	case hclog.Format:
		if len(v) > 0 {
			if f, ok := v[0].(string); ok {
				return fmt.Sprintf(f, v[1:]...)
			}
		}
		return fmt.Sprint(v...)
	case hclog.Hex:
		return fmt.Sprintf("0x%x", int(v))
	case hclog.Octal:
		return fmt.Sprintf("0%o", int(v))
	case hclog.Binary:
		return fmt.Sprintf("0b%b", int(v))
	case hclog.Quote:
		return fmt.Sprintf("%q", string(v))
	case error:
		return v.Error() // hclog logs an error's text, never its struct
	}
	return v
}

// repeatWindow is how long a warning or error about one peer is said
// once: a dead peer is news when it goes, not twice a second after.
const repeatWindow = 30 * time.Second

// repeatLimiter lets one line of each (message, peer) through per window,
// and counts the others for the next line that gets through. Its memory
// is bounded: the messages are raft's own, the peers the cluster's.
type repeatLimiter struct {
	window time.Duration
	now    func() time.Time
	mu     sync.Mutex
	seen   map[repeatKey]*repeatState
}

type repeatKey struct{ msg, peer string }

type repeatState struct {
	last       time.Time
	suppressed int
}

// maxRepeatKeys bounds the map: past it, states whose window is over are
// dropped.
const maxRepeatKeys = 1024

func newRepeatLimiter(window time.Duration, now func() time.Time) *repeatLimiter {
	return &repeatLimiter{window: window, now: now, seen: make(map[repeatKey]*repeatState)}
}

// allow reports whether a line of msg about peer is logged now, and how
// many lines of it were left out since the last that was.
func (r *repeatLimiter) allow(msg, peer string) (bool, int) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	k := repeatKey{msg, peer}
	st := r.seen[k]
	if st == nil {
		if len(r.seen) >= maxRepeatKeys {
			for key, s := range r.seen {
				if now.Sub(s.last) >= r.window {
					delete(r.seen, key)
				}
			}
		}
		r.seen[k] = &repeatState{last: now}
		return true, 0
	}
	if now.Sub(st.last) < r.window {
		st.suppressed++
		return false, 0
	}
	n := st.suppressed
	st.last, st.suppressed = now, 0
	return true, n
}

// peerOf is the peer an hclog line names (raft says peer, target or
// server-id), or "".
func peerOf(args []any) string {
	for i := 0; i+1 < len(args); i += 2 {
		if k, ok := args[i].(string); ok && (k == "peer" || k == "target" || k == "server-id" || k == "id") {
			return fmt.Sprint(args[i+1])
		}
	}
	return ""
}
