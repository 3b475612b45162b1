package cluster

import (
	"encoding/binary"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/dflockd-ng/dflockd/timerwheel"
)

// proposer runs while its node leads: it turns the queued ops into
// batches (all that gathered while earlier entries were in flight: group
// commit), stamps them with the cluster clock, and proposes time itself
// when an engine deadline falls due, when the GC interval passes, or when
// nothing was proposed for a ClockTick.
type proposer struct {
	n          *Node
	wake, stop chan struct{}
	done       chan struct{}
}

// keepQueue bounds the queue storage the proposer hands back for reuse.
const keepQueue = 1 << 20

func (p *proposer) run() {
	defer close(p.done)
	n := p.n
	// inflight carries the entries handed to raft to the completion
	// goroutine; pending counts those not yet applied, and freed tells
	// the loop one was.
	inflight := make(chan proposal, n.cfg.Inflight)
	observe := n.cfg.Observer.Apply
	var pending atomic.Int32
	var commit atomic.Int64 // the last entry's propose-to-apply time, ns
	freed := make(chan struct{}, 1)
	failed := make(chan struct{})
	go func() {
		// Completion: an entry that fails to commit means leadership is
		// gone (or going); raft's notification does the demotion.
		for b := range inflight {
			if b.f.Error() != nil {
				select {
				case <-failed:
				default:
					close(failed)
				}
			} else {
				took := time.Since(b.at)
				commit.Store(int64(took))
				if observe != nil {
					observe(took)
				}
			}
			pending.Add(-1)
			select {
			case freed <- struct{}{}:
			default:
			}
		}
	}()
	defer close(inflight)
	timer := time.NewTimer(0)
	defer timer.Stop()
	lastGC := n.cfg.Clock.Now()
	// proposed is the stamp of the last batch proposed: the deadlines up
	// to it fire when that batch applies, so time is not proposed again
	// for them meanwhile.
	n.mu.Lock()
	proposed := n.mu.clock.last
	n.mu.Unlock()
	// spare is the queue storage of the last batch, handed back to the
	// queue for the next one: a batch's ops are copied into its entry.
	var spare []byte
	var g gatherer
	for {
		now := n.cfg.Clock.Now()
		n.mu.Lock()
		nops := n.mu.nops
		// Group commit: while Inflight entries are on their way, requests
		// gather into the next one (up to BatchMax), so a loaded leader
		// writes few large entries rather than many small ones.
		if nops < n.cfg.BatchMax && int(pending.Load()) >= n.cfg.Inflight {
			nops = 0
		}
		var holdUntil time.Time
		if nops > 0 && nops < n.cfg.BatchMax {
			var hold bool
			if hold, holdUntil = g.hold(nops, time.Now(), time.Duration(commit.Load())); hold {
				nops = 0 // more are on their way (gather.go)
			}
		}
		var ops []byte
		if nops > 0 {
			ops = n.mu.queue
			n.mu.queue, n.mu.nops = spare[:0], 0
			spare = nil
		}
		clk := &n.mu.clock
		stamp := clk.stamp()
		due := n.nextDue(proposed)
		localDue := clk.local(due)
		n.mu.Unlock()
		gc := now-lastGC >= timerwheel.Instant(n.cfg.GCInterval)
		timeDue := due > proposed && stamp >= due
		if nops > 0 || gc || timeDue {
			g.proposed(nops)
			if gc {
				ops = appendOp(ops, &Op{Kind: OpGC})
				nops++
				lastGC = now
			}
			// The entry's own storage: raft keeps it.
			data := make([]byte, 0, 1+2*binary.MaxVarintLen64+len(ops))
			data = append(data, batchFormat)
			data = binary.AppendVarint(data, int64(stamp))
			data = binary.AppendUvarint(data, uint64(nops))
			data = append(data, ops...)
			if cap(ops) <= keepQueue {
				spare = ops
			}
			proposed = stamp
			pending.Add(1)
			select {
			case inflight <- proposal{n.raft.Apply(data, 0), time.Now()}:
			case <-p.stop:
				return
			}
			continue
		}
		wait := n.cfg.GCInterval - time.Duration(now-lastGC)
		if due > proposed {
			wait = min(wait, time.Duration(localDue-now))
		} // else: woken by the apply of the batch that covers it (kick)
		if !holdUntil.IsZero() {
			wait = min(wait, time.Until(holdUntil))
		}
		timer.Reset(max(wait, 0))
		select {
		case <-p.wake:
		case <-freed:
		case <-n.kick:
		case <-timer.C:
		case <-failed:
			<-p.stop
			return
		case <-p.stop:
			return
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// proposal is a batch on its way: its future, and when it was proposed.
type proposal struct {
	f  raft.ApplyFuture
	at time.Time
}

// nextDue returns the cluster instant the next batch must be stamped by:
// the engine's earliest deadline, or a ClockTick after the last batch.
func (n *Node) nextDue(proposed timerwheel.Instant) timerwheel.Instant {
	due := proposed + timerwheel.Instant(n.cfg.ClockTick)
	if e := n.fsm.Engine(); e != nil {
		if d, ok := e.NextDeadline(); ok {
			due = min(due, timerwheel.Of(d))
		}
	}
	return due
}
