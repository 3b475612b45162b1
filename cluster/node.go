package cluster

import (
	"crypto/rand"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// ErrNotLeader is returned by Submit on a node that does not lead, or
// leads but has not finished its promotion.
var ErrNotLeader = errors.New("cluster: not the leader")

// Config configures a Node. Zero durations and sizes mean their defaults.
type Config struct {
	ID        raft.ServerID
	Transport raft.Transport
	Logs      raft.LogStore
	Stable    raft.StableStore
	Snapshots raft.SnapshotStore
	// Raft, if set, is the raft configuration to start from (LocalID,
	// NotifyCh and BatchApplyCh are set by New); nil: DefaultRaft.
	Raft *raft.Config
	// Init is what the first leader of a new cluster proposes: a zero
	// TokenKey becomes a random one, and FenceFloor is raised to the
	// leader's wall clock in ns (spec §C.2).
	Init Init
	// OrphanTTL: while this node leads, a closed connection that
	// presented a stable-ref leaves its claims as an orphan its ref can
	// take over for this long (--orphan-ttl; 0: off).
	OrphanTTL time.Duration
	// Shards of this replica's engine (a local choice).
	Shards int
	Output Output
	// ClientAddrs maps the members' ids to their client addresses
	// (host:port), for redirects (error_not_leader <addr>); the
	// addresses the log records (members.go) come first.
	ClientAddrs map[raft.ServerID]string
	// Clock is this node's monotonic clock; the cluster clock advances
	// with it while the node leads.
	Clock timerwheel.Clock
	// ClockTick: a leader with nothing to propose still stamps an empty
	// batch this often, which bounds how much a failover can lengthen
	// leases (default 1 s).
	ClockTick time.Duration
	// GCInterval: how often the leader proposes idle-key pruning (spec
	// §D.6; default 5 s).
	GCInterval time.Duration
	// Inflight is how many entries may be on their way (handed to raft,
	// not yet applied) before queued ops wait for one to apply (default
	// 1): while they wait, they gather into one larger entry. BatchMax
	// ops queued are proposed without waiting (default 1024).
	Inflight int
	BatchMax int
	// Version names this server in the header of its backups
	// (SaveSnapshot).
	Version string
	// Observer is told of leader changes and of the leader's commit and
	// apply times, for the metrics (observe.go); its zero value: nothing.
	Observer Observer
}

// logCacheSize is how many of the last log entries a node keeps in memory
// (raft.LogCache). An entry is one batch: at most BatchMax ops, some
// kilobytes under load, a few bytes when idle.
const logCacheSize = 256

// DefaultRaft is the raft configuration of a dflockd-ng node: heartbeat
// and election timeouts of 1 s (a follower that sees its leader's process
// gone shortens them: quickfailover.go; else a failover takes 1–3 s), a
// leader lease of 250 ms, entries of up to 256 batches per disk write.
func DefaultRaft() *raft.Config {
	c := raft.DefaultConfig()
	c.HeartbeatTimeout = time.Second
	c.ElectionTimeout = time.Second
	c.LeaderLeaseTimeout = quickTimeout // quickfailover.go shortens the others to it
	c.CommitTimeout = 50 * time.Millisecond
	c.MaxAppendEntries = 256
	c.SnapshotThreshold = 8192
	c.SnapshotInterval = 120 * time.Second
	c.TrailingLogs = 10240
	// raft reports each replication's figures twice (as labels and, for
	// older dashboards, in the name); nothing here reads raft's go-metrics,
	// and a depth-1 cluster makes one report per write.
	c.NoLegacyTelemetry = true
	return c
}

// Node is one member of a cluster: a raft instance whose FSM is the
// engine, and while it leads, the proposer of its connections' requests
// and of time.
type Node struct {
	cfg  Config
	fsm  *FSM
	raft *raft.Raft

	quick  quickState    // quickfailover.go
	kick   chan struct{} // an engine deadline moved earlier
	notify chan bool     // raft's leadership changes
	quit   chan struct{}
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		term   uint64 // leadership attempts: a promotion checks it is still current
		ready  bool   // promoted: Submit is open
		epoch  uint64 // the epoch this node leads while ready
		queue  []byte // encoded ops waiting for the next batch
		nops   int    // ops in queue
		wake   chan struct{}
		stop   chan struct{} // closed to end the current proposer
		done   chan struct{} // closed when that proposer has ended
		clock  leaderClock
		demote func() // set while leading
		// tenants: the tenant of each local connection that has one
		// (SetTenant) and the epoch it was last proposed in. A
		// connection's session is new in each epoch, so its first op of
		// a later one (this node led, lost and leads again, or the
		// connection authenticated while it followed) proposes its
		// tenant again, first.
		tenants map[uint32]*connTenant
	}
}

// connTenant is a local connection's tenant (Node.mu.tenants).
type connTenant struct {
	bounds TenantBounds
	epoch  uint64 // the epoch it was proposed in; 0: not yet
}

// New starts a node. It joins whatever cluster its stores describe; a new
// cluster is created with Bootstrap.
func New(cfg Config) (*Node, error) {
	if cfg.Clock == nil {
		cfg.Clock = timerwheel.NewMonoClock()
	}
	if cfg.ClockTick <= 0 {
		cfg.ClockTick = time.Second
	}
	if cfg.GCInterval <= 0 {
		cfg.GCInterval = 5 * time.Second
	}
	if cfg.BatchMax <= 0 {
		cfg.BatchMax = 1024
	}
	if cfg.Inflight <= 0 {
		cfg.Inflight = 1
	}
	n := &Node{cfg: cfg, kick: make(chan struct{}, 1), notify: make(chan bool, 16), quit: make(chan struct{})}
	n.quick.ended = make(chan struct{}, 1)
	local := engine.Config{Shards: cfg.Shards, OnDeadline: func(int, timerwheel.Tick) {
		select {
		case n.kick <- struct{}{}:
		default:
		}
	}}
	n.fsm = NewFSM(local, cfg.Output)
	n.fsm.applied = func() {
		select {
		case n.kick <- struct{}{}:
		default:
		}
	}
	rc := DefaultRaft()
	if cfg.Raft != nil {
		c := *cfg.Raft
		rc = &c
	}
	rc.LocalID = cfg.ID
	rc.NotifyCh = n.notify
	n.quick.log = rc.Logger
	rc.BatchApplyCh = true
	var fsm raft.FSM = n.fsm
	var timed *timedFSM
	if cfg.Observer.Commit != nil {
		timed = &timedFSM{FSM: n.fsm, commit: cfg.Observer.Commit}
		fsm = timed
	}
	// raft reads every entry back from its log store twice: the leader
	// to send it to each follower, a follower to apply it. With the WAL
	// that is a read and a decode per entry and member; the last entries
	// in memory spare them (write-through: what is stored is unchanged).
	logs, err := raft.NewLogCache(logCacheSize, cfg.Logs)
	if err != nil {
		return nil, err
	}
	r, err := raft.NewRaft(rc, fsm, logs, cfg.Stable, cfg.Snapshots, cfg.Transport)
	if err != nil {
		return nil, err
	}
	n.raft = r
	if timed != nil {
		timed.raft.Store(r)
	}
	if o := cfg.Observer; o.LeaderChange != nil || o.NewLeader != nil {
		// Before any election can end: raft needs a heartbeat timeout
		// without a leader to start one.
		watchLeaders(r, func(id raft.ServerID, addr raft.ServerAddress) {
			if o.NewLeader != nil {
				o.NewLeader(string(id), string(addr))
			}
			if o.LeaderChange != nil {
				o.LeaderChange()
			}
		})
	}
	n.wg.Add(2)
	go n.watchLeadership()
	go n.watchPeerEnds()
	return n, nil
}

// Bootstrap creates a new cluster of servers (this node among them) if
// the stores hold none; on a node that already has state it does nothing
// (raft's ErrCantBootstrap is not an error here).
func (n *Node) Bootstrap(servers []raft.Server) error {
	err := n.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error()
	if errors.Is(err, raft.ErrCantBootstrap) {
		return nil
	}
	return err
}

// Raft returns the node's raft instance (membership, stats, leadership
// transfer).
func (n *Node) Raft() *raft.Raft { return n.raft }

// FSM returns the node's replica.
func (n *Node) FSM() *FSM { return n.fsm }

// Leader returns the current leader's id and raft address, empty when
// unknown.
func (n *Node) Leader() (raft.ServerID, raft.ServerAddress) {
	addr, id := n.raft.LeaderWithID()
	return id, addr
}

// LeaderAddr returns the leader's client address, "" when unknown.
func (n *Node) LeaderAddr() string {
	id, _ := n.Leader()
	return n.ClientAddr(id)
}

// Engine returns the local replica of the engine (nil before Init).
func (n *Node) Engine() *engine.Engine { return n.fsm.Engine() }

// Now returns the cluster clock.
func (n *Node) Now() timerwheel.Instant { return n.fsm.Now() }

// Leading is Ready.
func (n *Node) Leading() bool { return n.Ready() }

// Ready reports whether this node leads and accepts Submit.
func (n *Node) Ready() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.ready
}

// Submit proposes a request of local connection conn (a number the
// caller chooses, unique among its open connections). Its result reaches
// the Output when the entry carrying it applies, or Demoted says it never
// will. Submit copies what it needs of req.
func (n *Node) Submit(conn uint32, req *vocab.Request) error {
	return n.enqueue(&Op{Kind: OpRequest, Req: *req}, conn)
}

// Close proposes the disconnect cleanup of local connection conn. A node
// that does not lead has nothing to clean up: the next leader's
// promotion ends the connections of earlier epochs.
func (n *Node) Close(conn uint32) {
	_ = n.enqueue(&Op{Kind: OpClose}, conn)
	n.mu.Lock()
	delete(n.mu.tenants, conn)
	n.mu.Unlock()
}

// SetTenant proposes the bounds of the tenant named name and, when conn
// is not 0, makes it that local connection's (OpTenant). Nothing is
// answered; the connection's later requests follow it in the log.
//
// A connection's tenant is remembered until its Close: the connection's
// first op in any later epoch of this node's leadership proposes it
// again, so no session of the connection goes uncounted.
func (n *Node) SetTenant(conn uint32, name string, claims, waiting, keys int64) error {
	tb := TenantBounds{Name: []byte(name), Claims: claims, Waiting: waiting, Keys: keys}
	n.mu.Lock()
	if conn != 0 {
		if n.mu.tenants == nil {
			n.mu.tenants = make(map[uint32]*connTenant)
		}
		n.mu.tenants[conn] = &connTenant{bounds: tb}
	} else {
		// New bounds (a reload): what a connection proposes again later
		// must not bring the old ones back.
		for _, ct := range n.mu.tenants {
			if string(ct.bounds.Name) == name {
				ct.bounds = TenantBounds{Name: ct.bounds.Name, Claims: claims, Waiting: waiting, Keys: keys}
			}
		}
	}
	n.mu.Unlock()
	return n.enqueue(&Op{Kind: OpTenant, Tenant: tb}, conn)
}

// Cancel proposes the withdrawal of conn's parked request of tag.
func (n *Node) Cancel(conn uint32, tag uint32) error {
	return n.enqueue(&Op{Kind: OpCancel, Tag: tag}, conn)
}

func (n *Node) enqueue(op *Op, conn uint32) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.mu.ready {
		return ErrNotLeader
	}
	op.Conn = n.mu.epoch<<32 | uint64(conn)
	was := n.mu.nops
	if len(n.mu.tenants) > 0 && op.Kind != OpClose {
		if ct := n.mu.tenants[conn]; ct != nil && ct.epoch != n.mu.epoch {
			ct.epoch = n.mu.epoch
			if op.Kind != OpTenant {
				n.mu.queue = appendOp(n.mu.queue, &Op{Kind: OpTenant, Conn: op.Conn, Tenant: ct.bounds})
				n.mu.nops++
			}
		}
	}
	n.mu.queue = appendOp(n.mu.queue, op)
	n.mu.nops++
	if was == 0 {
		select {
		case n.mu.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// Shutdown stops the node (without a leadership transfer: see
// TransferLeadership).
func (n *Node) Shutdown() error {
	close(n.quit)
	err := n.raft.Shutdown().Error()
	n.wg.Wait()
	n.demote()
	return err
}

// TransferLeadership hands leadership to another voter, if this node
// leads: a planned stop then costs one redirect, not an election timeout.
func (n *Node) TransferLeadership() error {
	if n.raft.State() != raft.Leader {
		return nil
	}
	return n.raft.LeadershipTransfer().Error()
}

// watchLeadership promotes and demotes as raft says.
func (n *Node) watchLeadership() {
	defer n.wg.Done()
	for {
		select {
		case <-n.quit:
			return
		case leading := <-n.notify:
			n.demote()
			if leading {
				n.mu.Lock()
				term := n.mu.term
				n.mu.Unlock()
				n.wg.Add(1)
				go func() {
					defer n.wg.Done()
					n.promote(term)
				}()
			}
		}
	}
}

// promote makes a new leader ready: every entry of earlier terms is
// applied (Barrier), the cluster gets its Init if it is new, and a
// Promote entry starts this node's epoch. Only then does Submit open, and
// the cluster clock resumes from where the log left it.
func (n *Node) promote(term uint64) {
	if err := n.raft.Barrier(0).Error(); err != nil {
		return
	}
	if !n.fsm.Inited() {
		in := n.cfg.Init
		if in.TokenKey == (engine.TokenKey{}) {
			if _, err := rand.Read(in.TokenKey[:]); err != nil {
				panic("cluster: no randomness for the token key: " + err.Error())
			}
		}
		in.FenceFloor = max(in.FenceFloor, uint64(time.Now().UnixNano()))
		b := AppendBatch(nil, &Batch{Stamp: n.fsm.Now(), Ops: []Op{{Kind: OpInit, Init: in}}})
		if err := n.raft.Apply(b, 0).Error(); err != nil {
			return
		}
	}
	ops := []Op{
		{Kind: OpOrphanTTL, TTL: n.cfg.OrphanTTL}, // before the Promote that may orphan
		{Kind: OpPromote}}
	floor, restored := n.fsm.restoredFloor()
	if restored {
		// A cluster restored from a backup: its fences go above any the
		// backup's source issued, first of all (backup.go).
		floor = max(floor, uint64(time.Now().UnixNano()))
		ops = append([]Op{{Kind: OpFenceFloor, Floor: floor}}, ops...)
	}
	f := n.raft.Apply(AppendBatch(nil, &Batch{Stamp: n.fsm.Now(), Ops: ops}), 0)
	if f.Error() != nil {
		return
	}
	epoch, _ := f.Response().(uint64)
	if epoch == 0 {
		return
	}
	n.publishMembers(restored) // members.go: the client addresses the log lacks
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.term != term {
		return // demoted meanwhile
	}
	n.fsm.deliverEpoch.Store(epoch)
	n.mu.ready, n.mu.epoch = true, epoch
	n.mu.queue, n.mu.nops = n.mu.queue[:0], 0
	n.mu.clock = leaderClock{clock: n.cfg.Clock, base: n.fsm.Now(), since: n.cfg.Clock.Now()}
	n.mu.clock.last = n.mu.clock.base
	n.mu.wake = make(chan struct{}, 1)
	n.mu.stop, n.mu.done = make(chan struct{}), make(chan struct{})
	p := &proposer{n: n, wake: n.mu.wake, stop: n.mu.stop, done: n.mu.done}
	go p.run()
}

// demote ends this node's leadership, if it had one: the proposer stops,
// queued ops are dropped, and the output answers what was waiting.
func (n *Node) demote() {
	n.mu.Lock()
	n.mu.term++
	wasReady := n.mu.ready
	n.mu.ready = false
	stop, done := n.mu.stop, n.mu.done
	n.mu.stop, n.mu.done = nil, nil
	n.mu.queue, n.mu.nops = n.mu.queue[:0], 0
	n.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	n.fsm.deliverMu.Lock()
	n.fsm.deliverEpoch.Store(0)
	n.fsm.deliverMu.Unlock()
	if wasReady && n.cfg.Output != nil {
		n.cfg.Output.Demoted()
	}
}

// leaderClock stamps batches: the cluster clock at promotion plus this
// node's monotonic time since, never going back. Wall clocks play no
// part, so a node whose clock is hours off changes nothing; while no
// leader stamps, the cluster clock stands still, which can only lengthen
// leases.
type leaderClock struct {
	clock timerwheel.Clock
	base  timerwheel.Instant // cluster time at promotion
	since timerwheel.Instant // local time at promotion
	last  timerwheel.Instant
}

func (c *leaderClock) stamp() timerwheel.Instant {
	t := c.base + (c.clock.Now() - c.since)
	c.last = max(t, c.last)
	return c.last
}

// local returns the local instant at which the cluster clock reaches t.
func (c *leaderClock) local(t timerwheel.Instant) timerwheel.Instant {
	return c.since + (t - c.base)
}
