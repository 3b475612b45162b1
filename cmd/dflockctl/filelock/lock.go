package filelock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// Protocol defaults and local bounds.
const (
	// DefaultStale is the protocol's default stale timeout.
	DefaultStale = 3600 * time.Second
	// DefaultRetry is the protocol's default retry interval for blocking
	// acquisition.
	DefaultRetry = 100 * time.Millisecond

	// maxFileBytes bounds how much of a lock file is read: a real one is
	// three short lines, and a huge file at the lock path must not make us
	// allocate its size.
	maxFileBytes = 64 << 10
	// maxRounds bounds the create → judge → remove rounds of one attempt.
	// Each round that does not end the attempt means some other process
	// changed the file in between; after this many we report the lock as
	// held and let the caller's retry interval pace us.
	maxRounds = 8
)

// Errors returned by Lock methods; match them with errors.Is.
var (
	// ErrHeld: the lock file exists and is not stale.
	ErrHeld = errors.New("filelock: lock is held")
	// ErrTimeout: Acquire gave up; the error also matches ErrHeld.
	ErrTimeout = errors.New("filelock: timed out")
	// ErrNotOwner: Release found a lock file whose pid is not ours.
	ErrNotOwner = errors.New("filelock: lock file belongs to another process")
	// ErrNotHeld: there is no lock file.
	ErrNotHeld = errors.New("filelock: no lock file")
)

// errChanged means the path was unlinked or replaced while we were judging
// the file we had opened: whatever we concluded is about a dead inode.
var errChanged = errors.New("filelock: lock file changed while being read")

// Options configures a Lock. The zero value means "protocol defaults, our
// own pid, no tag".
type Options struct {
	// PID is written into pid= on acquire and must match on release.
	// 0 means os.Getpid().
	PID int
	// Tag is the optional human-readable description written into tag=.
	Tag string
	// Stale is the stale timeout; 0 means DefaultStale.
	Stale time.Duration
	// Retry is the pause between attempts of Acquire; 0 means DefaultRetry.
	Retry time.Duration
	// Now is the clock used for timestamps and staleness; nil means
	// time.Now. Tests use it to age a lock without sleeping.
	Now func() time.Time
}

// Lock is one lock file path together with the identity used to hold it.
type Lock struct {
	path  string
	pid   int
	tag   string
	stale time.Duration
	retry time.Duration
	now   func() time.Time
}

// Holder describes an existing lock file as observed at one moment.
type Holder struct {
	Info
	// Malformed is non-nil when pid or timestamp were missing or invalid.
	Malformed error
	// Since is when the lock was taken: the timestamp field, or the file's
	// modification time when the timestamp is unusable.
	Since time.Time
	// Age is now - Since.
	Age time.Duration
	// Stale reports Age > the stale timeout.
	Stale bool
}

// New returns a Lock for path. It fails only for an invalid tag or a
// negative duration.
func New(path string, o Options) (*Lock, error) {
	if o.Tag != "" {
		if err := ValidTag(o.Tag); err != nil {
			return nil, err
		}
	}
	if o.Stale < 0 || o.Retry < 0 || o.PID < 0 {
		return nil, fmt.Errorf("filelock: negative option in %+v", o)
	}
	l := &Lock{path: path, pid: o.PID, tag: o.Tag, stale: o.Stale, retry: o.Retry, now: o.Now}
	if l.pid == 0 {
		l.pid = os.Getpid()
	}
	if l.stale == 0 {
		l.stale = DefaultStale
	}
	if l.retry == 0 {
		l.retry = DefaultRetry
	}
	if l.now == nil {
		l.now = time.Now
	}
	return l, nil
}

// Path returns the lock file path.
func (l *Lock) Path() string { return l.path }

// PID returns the pid written on acquire and checked on release.
func (l *Lock) PID() int { return l.pid }

// TryAcquire makes one acquisition attempt. On success it returns nil; if
// the lock is held it returns the holder and an error matching ErrHeld; any
// other error is an I/O failure.
func (l *Lock) TryAcquire() (Holder, error) {
	var h Holder
	for range maxRounds {
		err := l.create()
		if err == nil {
			return Holder{}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return Holder{}, err
		}
		var judged Holder
		judged, err = l.removeIf(func(h Holder) error {
			if !h.Stale {
				return ErrHeld
			}
			return nil
		})
		switch {
		case err == nil:
			// Removed a stale lock: retry from step 1.
		case errors.Is(err, ErrNotHeld), errors.Is(err, errChanged):
			// Released or replaced under us: retry from step 1.
		case errors.Is(err, errContended):
			// Another process is removing or releasing it right now.
			return h, fmt.Errorf("%w (being changed by another process)", ErrHeld)
		default:
			return judged, err
		}
		if judged.PID != 0 || judged.HasTimestamp {
			h = judged
		}
	}
	return h, fmt.Errorf("%w (changed %d times during one attempt)", ErrHeld, maxRounds)
}

// Acquire retries TryAcquire every retry interval until it succeeds,
// timeout has elapsed (→ an error matching both ErrTimeout and ErrHeld), or
// ctx is done. A negative timeout waits forever; 0 makes exactly one attempt.
func (l *Lock) Acquire(ctx context.Context, timeout time.Duration) (Holder, error) {
	start := time.Now()
	var t *time.Timer
	for {
		h, err := l.TryAcquire()
		if err == nil || !errors.Is(err, ErrHeld) {
			return h, err
		}
		if timeout >= 0 && time.Since(start) >= timeout {
			return h, fmt.Errorf("%w after %v: %w", ErrTimeout, timeout, err)
		}
		if t == nil {
			t = time.NewTimer(l.retry)
			defer t.Stop()
		} else {
			t.Reset(l.retry) // fired and drained: safe to reuse
		}
		select {
		case <-ctx.Done():
			return h, ctx.Err()
		case <-t.C:
		}
	}
}

// Release removes the lock file if its pid is ours, or whatever it says
// when force is set. It returns an error matching ErrNotOwner (with the
// holder) or ErrNotHeld when it removes nothing.
func (l *Lock) Release(force bool) (Holder, error) {
	return l.removeRetrying(func(h Holder) error {
		if !force && h.PID != l.pid {
			return ErrNotOwner
		}
		return nil
	})
}

// Cleanup removes the lock file only if it is stale. It returns the holder
// it judged; ErrHeld if the file is fresh, ErrNotHeld if there is none.
func (l *Lock) Cleanup() (Holder, error) {
	return l.removeRetrying(func(h Holder) error {
		if !h.Stale {
			return ErrHeld
		}
		return nil
	})
}

// Stat reads the lock file without changing anything. It returns ErrNotHeld
// when there is none.
func (l *Lock) Stat() (Holder, error) {
	f, err := os.Open(l.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Holder{}, ErrNotHeld
		}
		return Holder{}, err
	}
	defer f.Close()
	return l.judge(f)
}

// create is steps 1–2 of the protocol: exclusive create, write, fsync. A
// partial write is undone so no half-written lock stays behind.
func (l *Lock) create() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	content := AppendInfo(nil, Info{PID: l.pid, Timestamp: l.now().Unix(), HasTimestamp: true, Tag: l.tag})
	_, err = f.Write(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(l.path)
		return fmt.Errorf("filelock: writing %s: %w", l.path, err)
	}
	return nil
}

// removeRetrying runs removeIf again when the file changed under it, so a
// verdict is always about the file that is there now.
func (l *Lock) removeRetrying(decide func(Holder) error) (Holder, error) {
	var h Holder
	var err error
	for range maxRounds {
		h, err = l.removeIf(decide)
		if !errors.Is(err, errChanged) && !errors.Is(err, errContended) {
			return h, err
		}
		time.Sleep(time.Millisecond)
	}
	return h, err
}

// removeIf unlinks the lock file if decide returns nil for it, and returns
// the holder it judged. The judgement and the unlink happen under a guard
// (see guardRemoval) after checking that the path still names the inode that
// was read, so two processes acting on the same stale file cannot both
// remove something: the second finds a different inode (errChanged) or no
// file (ErrNotHeld).
func (l *Lock) removeIf(decide func(Holder) error) (Holder, error) {
	f, err := os.Open(l.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Holder{}, ErrNotHeld
		}
		return Holder{}, err
	}
	defer f.Close() // also drops the guard, after the unlink
	if err := guardRemoval(f); err != nil {
		return Holder{}, err
	}
	opened, err := f.Stat()
	if err != nil {
		return Holder{}, err
	}
	current, err := os.Stat(l.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Holder{}, ErrNotHeld
		}
		return Holder{}, err
	}
	// The open descriptor pins the inode, so its number cannot be reused
	// by a new file while we compare.
	if !os.SameFile(opened, current) {
		return Holder{}, errChanged
	}
	h, err := l.judge(f)
	if err != nil {
		return h, err
	}
	if err := decide(h); err != nil {
		return h, err
	}
	if err := os.Remove(l.path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return h, ErrNotHeld
		}
		return h, err
	}
	return h, nil
}

// judge parses an open lock file and ages it.
func (l *Lock) judge(f *os.File) (Holder, error) {
	st, err := f.Stat()
	if err != nil {
		return Holder{}, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes))
	if err != nil {
		return Holder{}, err
	}
	info, perr := Parse(data)
	h := Holder{Info: info, Malformed: perr, Since: st.ModTime()}
	if info.HasTimestamp {
		h.Since = time.Unix(info.Timestamp, 0)
	}
	h.Age = l.now().Sub(h.Since)
	h.Stale = h.Age > l.stale
	return h, nil
}
