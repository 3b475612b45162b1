package cluster

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Quick failover. A follower learns that its leader is gone only when its
// heartbeat timeout runs out, and the other follower, which still knows
// the dead leader, refuses its pre-vote until its own runs out too: with
// the default 1 s timeouts a failover took 1.6–2.3 s. But when a leader's
// process dies with its host up (kill -9, a crash, an OOM kill), the
// kernel closes its connections at once: the followers' raft connections
// from it end, and its raft port refuses new ones. So when an accepted
// raft connection ends, a follower asks its leader's raft port; if it is
// refused, the leader is gone, and the follower shortens its heartbeat and
// election timeouts to quickTimeout until a leader is known again (or
// quickHold passes). Both followers see their connections from the dead
// leader end, so both stand at once.
//
// Raft's safety does not rest on timeouts; what a wrong guess costs is an
// early election, and a leader that lives is never guessed dead: its port
// answers the probe (the connection that ended was an idle one its pool
// let go).

const (
	// quickTimeout is the heartbeat and election timeout of a follower
	// whose leader's port refused it. raft wants the leader lease within
	// the heartbeat timeout: DefaultRaft's lease is this.
	quickTimeout = 250 * time.Millisecond
	// quickHold bounds how long a follower keeps the short timeouts
	// without seeing a new leader.
	quickHold = 10 * time.Second
)

// quickState is a node's quick-failover state.
type quickState struct {
	ended     chan struct{} // an accepted raft connection ended (cap 1)
	quickened atomic.Int64  // times this node shortened its timeouts
	probes    atomic.Int64  // leader probes made (tests)
	log       hclog.Logger  // raft's, if set
}

// PeerConnEnded is told that an accepted raft connection ended
// (StreamConfig.OnEnded): a follower then checks whether its leader is
// gone. Any goroutine; it does not block.
func (n *Node) PeerConnEnded() {
	select {
	case n.quick.ended <- struct{}{}:
	default: // a check is due already
	}
}

// Quickened reports how many times this node shortened its timeouts
// because its leader's raft port refused it.
func (n *Node) Quickened() int64 { return n.quick.quickened.Load() }

// watchPeerEnds runs the checks PeerConnEnded asks for, one at a time.
func (n *Node) watchPeerEnds() {
	defer n.wg.Done()
	for {
		select {
		case <-n.quit:
			return
		case <-n.quick.ended:
		}
		if n.raft.State() != raft.Follower {
			continue
		}
		dead, _ := n.raft.LeaderWithID()
		if dead == "" {
			continue
		}
		gone := refused(dead)
		n.quick.probes.Add(1)
		if gone {
			n.quicken(dead)
		}
	}
}

// refused reports whether nothing listens at addr any more: a connection
// attempt is refused, or is taken and then reset or closed within
// quickTimeout. A dying process's sockets close one by one, so its
// listener may still take the probe and then reset it; a live peer's
// stream waits for the probe's hello far longer (handshakeTimeout).
// Slow or unreachable is not refused.
func refused(addr raft.ServerAddress) bool {
	c, err := net.DialTimeout("tcp", string(addr), quickTimeout)
	if err != nil {
		return errors.Is(err, syscall.ECONNREFUSED)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(quickTimeout))
	_, err = c.Read(make([]byte, 1))
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF)
}

// quicken shortens the timeouts until a leader other than dead is known,
// then puts them back.
func (n *Node) quicken(dead raft.ServerAddress) {
	saved := n.raft.ReloadableConfig()
	fast := saved
	fast.HeartbeatTimeout = min(saved.HeartbeatTimeout, quickTimeout)
	fast.ElectionTimeout = min(saved.ElectionTimeout, quickTimeout)
	if fast == saved || n.raft.ReloadConfig(fast) != nil {
		return // short already, or the lease does not allow it
	}
	n.quick.quickened.Add(1)
	if n.quick.log != nil {
		n.quick.log.Warn("the leader's raft port refuses connections: standing for election early",
			"leader", string(dead), "timeout", quickTimeout)
	}
	defer func() { _ = n.raft.ReloadConfig(saved) }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	hold := time.NewTimer(quickHold)
	defer hold.Stop()
	for {
		select {
		case <-n.quit:
			return
		case <-hold.C:
			return
		case <-tick.C:
			if addr, _ := n.raft.LeaderWithID(); addr != "" && addr != dead {
				return
			}
		}
	}
}
