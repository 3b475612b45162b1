package cluster

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
)

// ErrDamaged is what a *DamageError matches with errors.Is.
var ErrDamaged = errors.New("cluster: raft directory damaged")

// DamageError is OpenStorage's refusal of a directory whose log lost or
// garbled entries this member had acknowledged (or that cannot show it
// did not). Its message names the directory, the entries concerned and
// what the operator can do, which depends on whether another member can
// hold a copy.
type DamageError struct {
	dir string
	// from..to: the entries lost or unusable.
	from, to uint64
	// high: what this member had acknowledged storing (or owes from an
	// unfinished recovery); the log must reach it again.
	high      uint64
	snapIndex uint64
	logLast   uint64 // the WAL's last index as opened
	good      uint64 // the last entry before the damage (0: none)
	corrupt   string // what failed where; "" when the log merely ends early
	recovery  bool   // an earlier --raft-recover has not finished
	// markUnreadable: the mark file holds no valid record (empty, zeros,
	// both slots damaged), so how far the log reached is unknown; markWhy
	// names the file and says which.
	markUnreadable bool
	markWhy        string
	lone           bool // no other voter could hold a copy
	voters         int  // in the configuration known (0: none known)
	recoverAsked   bool // --raft-recover was given, and cannot help
}

// assess compares what the check found with the mark.
// markUnreadable is what is wrong with a mark file without a valid
// record ("": the mark is found, or absent).
func assess(dir string, c logCheck, m mark, markUnreadable string, snap *raft.SnapshotMeta, cfg *StorageConfig) *DamageError {
	d := &DamageError{dir: dir, logLast: c.last, good: c.last, markUnreadable: markUnreadable != "", markWhy: markUnreadable}
	if snap != nil {
		d.snapIndex = snap.Index
	}
	d.high = max(m.stored, m.owed)
	if c.bad != 0 {
		d.good, d.corrupt = c.bad-1, c.why
		d.high = max(d.high, c.last) // the corrupt entries were stored too
	}
	d.recovery = m.owed != 0 && d.usable() < m.owed
	d.from, d.to = d.usable()+1, d.high
	if c.bad != 0 {
		d.from = c.bad
	}
	// Who else could hold a copy: the membership the log (or snapshot)
	// records is raft's own view and wins; with none, the peer list.
	if c.config != nil {
		others := 0
		for _, s := range c.config.Servers {
			if s.Suffrage == raft.Voter {
				d.voters++
				if s.ID != cfg.ID {
					others++
				}
			}
		}
		d.lone = others == 0
	} else {
		d.voters = cfg.Peers
		d.lone = cfg.Peers <= 1
	}
	return d
}

// usable is the last index raft will have once the damage is dropped:
// the good entries, or the snapshot if it reaches further.
func (d *DamageError) usable() uint64 { return max(d.good, d.snapIndex) }

// damaged reports whether the directory must not start as it is.
func (d *DamageError) damaged() bool {
	return d.corrupt != "" || d.usable() < d.high || d.markUnreadable
}

// drop deletes the corrupt suffix, if any: raft-wal deletes only whole
// suffixes (or prefixes), so everything from the first bad entry on goes.
func (d *DamageError) drop(w *wal.WAL) error {
	if d.corrupt == "" || d.logLast < d.from {
		return nil
	}
	first, err := w.FirstIndex()
	if err != nil {
		return err
	}
	if err := w.DeleteRange(max(d.from, first), d.logLast); err != nil {
		return fmt.Errorf("raft log in %s: dropping the damaged entries %d..%d: %w", d.dir, d.from, d.logLast, err)
	}
	return nil
}

// what says what is wrong, for the log lines and the error.
func (d *DamageError) what() string {
	switch {
	case d.markUnreadable:
		return fmt.Sprintf("its raft-mark file is unreadable (%s), so how far its log reached is unknown, and whether the log (ending at index %d) lost entries this member had acknowledged cannot be told "+
			"(a raft-mark is written whole before it takes its name, so a present one without a valid record was damaged)", d.markWhy, d.usable())
	case d.corrupt != "":
		s := fmt.Sprintf("%s; entries %d..%d are unusable", d.corrupt, d.from, max(d.logLast, d.from))
		if d.high > d.logLast {
			s += fmt.Sprintf(", and the log ends at index %d where this member had acknowledged up to %d", d.logLast, d.high)
		}
		return s
	case d.recovery:
		return fmt.Sprintf("a --raft-recover has not finished: the log ends at index %d and must reach %d again (entries %d..%d are still missing)", d.usable(), d.high, d.from, d.to)
	}
	return fmt.Sprintf("its log ends at index %d but this member had acknowledged storing entries up to index %d: entries %d..%d are lost", d.usable(), d.high, d.from, d.to)
}

func (d *DamageError) Error() string {
	s := fmt.Sprintf("raft directory %s is damaged: %s. ", d.dir, d.what())
	switch {
	case d.markUnreadable:
		if d.recoverAsked {
			s += "--raft-recover cannot tell how far to copy back. "
		}
		s += "Restore the directory from a backup, or, if the log is known to be whole, start with --raft-accept-loss (DFLOCKD_RAFT_ACCEPT_LOSS=true) to take it as it is and start a new raft-mark"
		if !d.lone {
			s += fmt.Sprintf(". Or, as this member is one of %d voters and the others hold copies, remove it from the cluster (dflockctl cluster remove), "+
				"move this directory away, and add it back on an empty one (dflockctl cluster add): it then copies everything from the leader", d.voters)
		}
		s += "."
	case d.lone:
		if d.recoverAsked {
			s += "--raft-recover copies the entries back from another member, and there is none. "
		}
		s += fmt.Sprintf("This member is the cluster's only voter, so no other member holds a copy: restore the directory from a backup taken after index %d, "+
			"or start with --raft-accept-loss (DFLOCKD_RAFT_ACCEPT_LOSS=true) to continue from index %d, losing entries %d..%d for good.",
			d.to, d.usable(), d.from, d.to)
	default:
		s += fmt.Sprintf("This member is one of %d voters: restart it with --raft-recover (DFLOCKD_RAFT_RECOVER=true) to drop the damaged entries and copy them back from the leader; "+
			"until its log reaches index %d again it votes only for a member that holds entries up to there and does not stand for election itself (a cluster in which no running member holds these entries stays without a leader until one that has them returns). "+
			"Or restore the directory from a backup.", d.voters, d.high)
	}
	return s
}

// Unwrap makes the error match ErrDamaged.
func (d *DamageError) Unwrap() error { return ErrDamaged }
