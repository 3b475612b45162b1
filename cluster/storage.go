package cluster

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/types"
	"golang.org/x/sys/unix"
)

// Storage is a node's durable state under --raft-dir: the raft log and
// stable store (raft-wal, one fsync per appended batch of entries) in
// wal/, snapshots (raft's file store, the two newest kept) in snapshots/,
// the log mark (logmark.go) in raft-mark, and a LOCK file that keeps a
// second process off the same directory.
//
// Opening it verifies the log (logcheck.go) and compares it with the
// mark; a log that lost or garbled entries this member acknowledged
// refuses to open (DamageError) unless the configuration says how to
// recover (StorageConfig.Recover, AcceptLoss; damage.go).
type Storage struct {
	// Logs is raft's LogStore: the WAL behind the mark.
	Logs raft.LogStore
	// Stable is raft's StableStore (the WAL's metadata database).
	Stable raft.StableStore
	Snaps  *raft.FileSnapshotStore

	wal    *wal.WAL
	marked *markedLog // nil with NoMark
	guard  *voteGuard // recovering: keeps this member from standing, and from electing a member that lacks what it lost
	lock   *os.File
}

// StorageConfig configures OpenStorage; the zero value opens a member's
// directory as a normal start does.
type StorageConfig struct {
	// LogOutput receives the snapshot store's messages (nil: stderr).
	LogOutput io.Writer
	// Log receives what the startup check found and what recovery does
	// (nil: nothing is logged).
	Log *slog.Logger
	// ID is this member's raft id, Peers how many members --cluster-peers
	// lists: with the membership recorded in the log they tell whether
	// another member could hold a copy of what was lost.
	ID    raft.ServerID
	Peers int
	// Recover (--raft-recover): a damaged log loses its damaged suffix and
	// the member rejoins without voting until it has copied back from the
	// leader what it had acknowledged. Refused for the only voter.
	Recover bool
	// AcceptLoss (--raft-accept-loss): a damaged log loses its damaged
	// suffix and the member starts as it is, the loss accepted.
	AcceptLoss bool
	// NoMark leaves the mark unmaintained (the startup check still runs):
	// for the benchmark that measures what the mark costs, never for use.
	NoMark bool

	segmentSize int // tests: raft-wal's segment size (0: its 64 MiB)
}

// OpenStorage opens (creating) the storage in dir.
func OpenStorage(dir string, cfg StorageConfig) (*Storage, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(walDir(dir), 0o700); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("%s is in use by another process: %w", dir, err)
	}
	meta := &metaRecorder{BoltMetaDB: &metadb.BoltMetaDB{}}
	if cfg.segmentSize == 0 {
		cfg.segmentSize = wal.DefaultSegmentSize
	}
	logs, err := wal.Open(walDir(dir), wal.WithMetaStore(meta), wal.WithSegmentSize(cfg.segmentSize))
	if err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("raft log in %s cannot be opened (restore the directory from a backup): %w", dir, err)
	}
	s := &Storage{Logs: logs, Stable: logs, wal: logs, lock: lock}
	fail := func(err error) (*Storage, error) {
		if s.marked != nil {
			_ = s.marked.close()
		}
		_ = logs.Close()
		_ = lock.Close()
		return nil, err
	}
	if s.Snaps, err = raft.NewFileSnapshotStore(dir, 2, cfg.LogOutput); err != nil {
		return fail(fmt.Errorf("snapshots in %s: %w", dir, err))
	}
	if err := s.check(dir, meta.segments(), &cfg); err != nil {
		return fail(err)
	}
	return s, nil
}

// check verifies the log against itself and the mark, applies the
// recovery the configuration asks for, and sets up the mark for what
// follows.
func (s *Storage) check(dir string, segs []types.SegmentInfo, cfg *StorageConfig) error {
	began := time.Now()
	snaps, err := s.Snaps.List()
	if err != nil {
		return fmt.Errorf("snapshots in %s: %w", dir, err)
	}
	var snap *raft.SnapshotMeta
	if len(snaps) > 0 {
		snap = snaps[0]
	}
	c, err := checkLog(walDir(dir), s.wal, segs, snap)
	if err != nil {
		return fmt.Errorf("raft log in %s cannot be verified: %w", dir, err)
	}
	mf, ms, err := openMark(dir)
	if err != nil {
		return err
	}
	var m mark
	if ms == markFound {
		m = mf.last
	}
	d := assess(dir, c, m, mf.unreadable, snap, cfg)
	cfg.Log.Info("raft log checked", "dir", dir, "first_index", c.first, "last_index", c.last,
		"snapshot_index", d.snapIndex, "entries", c.entries, "segments", c.segments,
		"took", time.Since(began).Round(time.Millisecond).String())
	owed, owedTerm := m.owed, m.owedTerm
	switch {
	case !d.damaged() && owed != 0:
		cfg.Log.Info("raft log recovered: it reached the index it had acknowledged before its damage; this member votes again",
			"dir", dir, "index", owed)
		owed, owedTerm = 0, 0
	case d.damaged() && cfg.AcceptLoss && d.usable() == 0:
		_ = mf.close()
		return fmt.Errorf("raft directory %s is damaged: %s. Nothing usable remains to accept: move the directory away, "+
			"and either restore it from a backup or start afresh (a lone member with --cluster-bootstrap)", dir, d.what())
	case d.damaged() && cfg.AcceptLoss:
		if err := d.drop(s.wal); err != nil {
			_ = mf.close()
			return err
		}
		cfg.Log.Warn("raft log damage accepted (--raft-accept-loss): the damaged entries are dropped and the member starts without them",
			"dir", dir, "lost_from", d.from, "lost_to", d.to, "continues_from", d.usable(), "damage", d.what())
		owed, owedTerm = 0, 0
	case d.damaged() && cfg.Recover && !d.lone && !d.markUnreadable:
		if err := d.drop(s.wal); err != nil {
			_ = mf.close()
			return err
		}
		owed, owedTerm = s.owed(d.high, m)
		cfg.Log.Warn("raft log damaged; recovering (--raft-recover): the damaged entries are dropped, and this member stands for election only once its log reaches the owed index again, and votes only for a candidate whose log reaches it",
			"dir", dir, "lost_from", d.from, "lost_to", d.to, "log_ends_at", d.usable(), "owed", owed, "owed_term", owedTerm, "damage", d.what())
	case d.damaged():
		_ = mf.close()
		d.recoverAsked = cfg.Recover
		return d
	}
	next := mark{stored: d.usable(), writing: d.usable(), owed: owed, term: s.termAt(d.usable(), snap), owedTerm: owedTerm}
	if ms == markFound {
		err = mf.write(next, true)
	} else {
		err = mf.create(next)
		if ms == markAbsent && d.usable() > 0 {
			cfg.Log.Info("raft-mark started: losses of entries up to here cannot be detected", "dir", dir, "index", d.usable())
		}
	}
	if err != nil {
		_ = mf.close()
		return err
	}
	if owed != 0 {
		s.guard = newVoteGuard(owed, owedTerm)
	}
	if cfg.NoMark {
		// (A member recovering here stays guarded until it is restarted
		// with the mark: nothing would lift the guard.)
		return mf.close()
	}
	s.marked = newMarkedLog(s.wal, mf, d.usable(), owed, owedTerm, func(index uint64) {
		s.guard.lift()
		cfg.Log.Info("raft log recovered: it reached the index it had acknowledged before its damage; this member votes again",
			"dir", dir, "index", index)
	})
	s.Logs = s.marked
	return nil
}

// owed is what a member starting to recover from damage that reaches
// high owes: the index its log must reach again, and the term of the
// entry there, which a candidate's last entry must reach for this member
// to vote for it (voteguard.go). The term is the mark's when the mark
// recorded the entry at that index (the mark of an earlier recovery, or
// the stored one); otherwise (a version 1 mark, or corrupt entries past
// the mark) the member's current term, which is no lower than the term
// of any entry it stored; 0 when not even that is known, and then the
// member votes for no one until it has recovered.
func (s *Storage) owed(high uint64, m mark) (owed, term uint64) {
	switch {
	case high == m.owed && m.owedTerm != 0:
		return high, m.owedTerm
	case high == m.stored && m.term != 0:
		return high, m.term
	}
	term, err := s.Stable.GetUint64(keyCurrentTerm)
	if err != nil {
		term = 0
	}
	return high, term
}

// keyCurrentTerm is where raft keeps its current term in the stable
// store (raft's own key).
var keyCurrentTerm = []byte("CurrentTerm")

// termAt is the term of the entry at index as the directory holds it: in
// the log, or the snapshot's when it ends there; 0 if neither.
func (s *Storage) termAt(index uint64, snap *raft.SnapshotMeta) uint64 {
	var e raft.Log
	switch {
	case index == 0:
		return 0
	case s.wal.GetLog(index, &e) == nil:
		return e.Term
	case snap != nil && snap.Index == index:
		return snap.Term
	}
	return 0
}

// Transport returns t as raft must use it: while this member recovers
// from damage, it stands for nothing and votes only for candidates that
// hold what it lost (voteguard.go).
func (s *Storage) Transport(t raft.Transport) raft.Transport {
	if s.guard == nil {
		return t
	}
	return guardTransport(t, s.guard)
}

// Recovering reports whether this member is still copying back what it
// had acknowledged before its log was damaged (and so votes only for a
// candidate that holds it, and does not stand).
func (s *Storage) Recovering() bool { return s.guard != nil && s.guard.Recovering() }

// Close closes the log and releases the directory.
func (s *Storage) Close() error {
	var err error
	if s.marked != nil {
		err = s.marked.close()
	}
	if e := s.wal.Close(); e != nil {
		err = e
	}
	_ = s.lock.Close()
	return err
}

// metaRecorder is raft-wal's metadata store, remembering the segment list
// it loads and commits: the startup check reads the segments it names.
type metaRecorder struct {
	*metadb.BoltMetaDB
	mu   sync.Mutex
	last types.PersistentState
}

func (m *metaRecorder) Load(dir string) (types.PersistentState, error) {
	st, err := m.BoltMetaDB.Load(dir)
	m.record(st)
	return st, err
}

func (m *metaRecorder) CommitState(st types.PersistentState) error {
	err := m.BoltMetaDB.CommitState(st)
	if err == nil {
		m.record(st)
	}
	return err
}

func (m *metaRecorder) record(st types.PersistentState) {
	m.mu.Lock()
	m.last = types.PersistentState{NextSegmentID: st.NextSegmentID, Segments: append([]types.SegmentInfo(nil), st.Segments...)}
	m.mu.Unlock()
}

func (m *metaRecorder) segments() []types.SegmentInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last.Segments
}
