package cluster

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hashicorp/raft"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/snapfile"
)

// Backups (dflockctl snapshot save, dflockd snapshot restore).
//
// A backup is the FSM's own snapshot taken on the leader at its applied
// index (Capture), in a snapshot file (package snapfile) whose header
// names the index, the term, the members and the state's digest. A
// restore builds a new member's raft directory whose only content is that
// state as a raft snapshot at the backup's index, with the new cluster's
// members as its configuration: every member of the new cluster is
// restored from the same file with the same members, and so starts from
// the same snapshot; the first leader elected goes on from there.
//
// Fences. The restore raises the replicated Init's FenceFloor (which the
// digest does not cover) to RestoreFloor: the restoring machine's wall
// clock in ns, the backup's last fence plus fenceMargin, or the
// operator's floor, whichever is highest. The first leader of the new
// cluster finds the floor above the fence counter (restoredFloor) and,
// before its Promote, proposes an OpFenceFloor of that floor or its own
// wall clock in ns if higher: every fence the new cluster issues is above
// it. A cluster's fences start at its first leader's wall clock in ns and
// grow by one per grant, far slower than a nanosecond each, so a source
// whose clock does not run ahead of the restoring machine's has issued
// none above the restore's wall clock, before or after the backup.
//
// Time. The snapshot holds the cluster clock; the new cluster's first
// leader resumes it from there (leaderClock), so a lease that had d left
// at the backup's index ends d after that leader's promotion: the time
// between the backup and the restored cluster's first leader does not
// count, as the time without a leader does not count in a failover.
//
// Connections. The backup's sessions belong to connections of the old
// cluster's epochs: the new leader's Promote ends them as a failover
// does, cancelling their waits (and the requests queued behind them) and
// keeping their holds until their leases end; claims left to stable-refs
// (--orphan-ttl) stay orphans for the rest of their TTL.

// fenceMargin is added to a backup's last fence for the restored floor
// (snapfile.RestoreFenceMargin says why).
const fenceMargin = snapfile.RestoreFenceMargin

// ErrNotInited is returned when there is no state to back up yet.
var ErrNotInited = errors.New("cluster: no replicated state yet (the cluster's first entry has not applied)")

// Capture is the replicated state at one applied index, as a backup
// holds it.
type Capture struct {
	Index, Term uint64
	Digest      [sha256.Size]byte
	Fence       uint64 // the last fence issued
	Keys, Held  int    // engine.Census
	State       []byte // the FSM's snapshot (Restore reads it)
}

// Capture takes the replicated state as the last entry applied left it,
// with its digest: no entry applies meanwhile.
func (f *FSM) Capture() (Capture, error) {
	f.entryMu.Lock()
	defer f.entryMu.Unlock()
	var c Capture
	if !f.Inited() {
		return c, ErrNotInited
	}
	c.Index, c.Digest = f.appliedLocked()
	snap, err := f.Snapshot()
	if err != nil {
		return c, err
	}
	f.mu.RLock()
	c.Term = f.term
	eng := f.eng
	f.mu.RUnlock()
	c.State = snap.(snapshot)
	c.Fence = eng.LastFence()
	c.Keys, c.Held = eng.Census()
	return c, nil
}

// restoredFloor returns the floor a restore set (Init.FenceFloor) while
// the fence counter is still below it: a leader then proposes it.
func (f *FSM) restoredFloor() (uint64, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if !f.inited || f.eng == nil || f.init.FenceFloor <= f.eng.LastFence() {
		return 0, false
	}
	return f.init.FenceFloor, true
}

// SaveSnapshot writes a backup of the replicated state to w: on the
// leader only (ErrNotLeader elsewhere), once everything committed before
// the call has applied.
func (n *Node) SaveSnapshot(w io.Writer) error {
	if !n.Ready() {
		return ErrNotLeader
	}
	if err := n.raft.Barrier(10 * time.Second).Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return fmt.Errorf("%w: %w", ErrNotLeader, err)
		}
		return err
	}
	c, err := n.fsm.Capture()
	if err != nil {
		return err
	}
	h := snapfile.Header{ServerVersion: n.cfg.Version, Created: time.Now().UTC().Format(time.RFC3339),
		Index: c.Index, Term: c.Term, Digest: hex.EncodeToString(c.Digest[:]),
		Fence: c.Fence, Keys: c.Keys, LocksHeld: c.Held}
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return err
	}
	for _, s := range cf.Configuration().Servers {
		h.Members = append(h.Members, snapfile.Member{ID: string(s.ID), Address: string(s.Address), Suffrage: s.Suffrage.String()})
	}
	return snapfile.Write(w, &h, c.State)
}

// RestoreConfig says how RestoreDir builds a member's directory.
type RestoreConfig struct {
	// Servers are the new cluster's members (--cluster-peers); nil: the
	// backup's members.
	Servers []raft.Server
	// FenceFloor (--fence-floor): fences after the restore are above it,
	// as above the wall clock and the backup's fence (0: those alone).
	FenceFloor uint64
	// Now is the wall clock (nil: time.Now).
	Now func() time.Time
}

// Restored describes the directory RestoreDir built.
type Restored struct {
	Index, Term uint64
	Digest      [sha256.Size]byte // the state's, equal to the backup's
	FenceFloor  uint64            // fences after the restore are above it
	Servers     []raft.Server
}

// RestoreDir builds a new member's raft directory in dir from a backup
// read by snapfile.Read: dir must not exist or be empty. The state is
// checked against the backup's digest before anything is written; on any
// error dir is left as it was found.
func RestoreDir(dir string, info snapfile.Info, state []byte, cfg RestoreConfig) (Restored, error) {
	var out Restored
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	existed := false
	switch ents, err := os.ReadDir(dir); {
	case err == nil && len(ents) > 0:
		return out, fmt.Errorf("%s is not empty: a restore builds a new member's directory (move it away, or name another)", dir)
	case err == nil:
		existed = true
	case !errors.Is(err, os.ErrNotExist):
		return out, err
	}
	f := NewFSM(engine.Config{}, nil)
	if err := f.Restore(io.NopCloser(bytes.NewReader(state))); err != nil {
		return out, fmt.Errorf("the snapshot's state cannot be decoded: %w", err)
	}
	if !f.Inited() {
		return out, fmt.Errorf("the snapshot holds no state")
	}
	out.Index, out.Digest = f.Applied()
	if want := info.Header.Digest; hex.EncodeToString(out.Digest[:]) != want {
		return out, fmt.Errorf("the snapshot's state decodes to digest %x, its header says %s", out.Digest, want)
	}
	if out.Index != info.Header.Index || out.Index == 0 {
		return out, fmt.Errorf("the snapshot's state is at index %d, its header says %d", out.Index, info.Header.Index)
	}
	out.Term = max(info.Header.Term, 1)
	out.FenceFloor = max(uint64(cfg.Now().UnixNano()), f.Engine().LastFence()+fenceMargin, cfg.FenceFloor)
	f.mu.Lock()
	f.init.FenceFloor = out.FenceFloor
	f.mu.Unlock()
	snap, err := f.Snapshot()
	if err != nil {
		return out, err
	}
	restated := []byte(snap.(snapshot))
	g := NewFSM(engine.Config{}, nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(restated))); err != nil || g.Digest() != out.Digest {
		return out, fmt.Errorf("cluster: restore: the state re-encoded does not decode to the same digest (%v)", err)
	}
	out.Servers = cfg.Servers
	if out.Servers == nil {
		for _, m := range info.Header.Members {
			s := raft.Server{ID: raft.ServerID(m.ID), Address: raft.ServerAddress(m.Address), Suffrage: raft.Voter}
			switch m.Suffrage {
			case raft.Nonvoter.String():
				s.Suffrage = raft.Nonvoter
			case raft.Staging.String():
				s.Suffrage = raft.Staging
			}
			out.Servers = append(out.Servers, s)
		}
	}
	if len(out.Servers) == 0 {
		return out, fmt.Errorf("no members: the snapshot names none, and none were given")
	}
	if err := writeRestored(dir, &out, restated); err != nil {
		_ = os.RemoveAll(dir)
		if existed {
			_ = os.Mkdir(dir, 0o700)
		}
		return out, err
	}
	return out, nil
}

// writeRestored makes dir a member's storage holding state as its raft
// snapshot at r's index and term, the term as its current term, and an
// empty log; then opens it again as a start would, to check it.
func writeRestored(dir string, r *Restored, state []byte) error {
	s, err := OpenStorage(dir, StorageConfig{LogOutput: io.Discard})
	if err != nil {
		return err
	}
	sink, err := s.Snaps.Create(raft.SnapshotVersionMax, r.Index, r.Term,
		raft.Configuration{Servers: r.Servers}, r.Index, addrEncoder{})
	if err == nil {
		if _, err = sink.Write(state); err != nil {
			_ = sink.Cancel()
		} else {
			err = sink.Close()
		}
	}
	if err == nil {
		err = s.Stable.SetUint64(keyCurrentTerm, r.Term)
	}
	if e := s.Close(); err == nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", dir, err)
	}
	s, err = OpenStorage(dir, StorageConfig{LogOutput: io.Discard})
	if err != nil {
		return fmt.Errorf("the restored directory %s does not open: %w", dir, err)
	}
	return s.Close()
}

// addrEncoder encodes peers for the snapshot's metadata as raft's TCP
// transport (and the cluster's stream layer) does: the address itself.
// The snapshot store calls nothing else of it.
type addrEncoder struct{ raft.Transport }

func (addrEncoder) EncodePeer(_ raft.ServerID, a raft.ServerAddress) []byte { return []byte(a) }
