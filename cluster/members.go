package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// Membership. Raft knows the members by id and raft address; clients
// need each member's client address too, to follow a redirect
// (error_not_leader <addr>, X-Dflockd-Leader). A member's own flags give
// it the addresses of the members it was started with (--cluster-peers,
// --advertise-addr: Config.ClientAddrs); a member added later is known
// to the others only through the log: OpMember records id → client
// address in the replicated state (FSM.members, snapshotted and in the
// digest), and clientAddr consults it before the static map. So every
// replica, the added one included, can name every member's address.
//
// What publishes the addresses:
//   - AddVoter, before the raft configuration change (a member that
//     raft knows but whose address is unknown would make redirects
//     bare);
//   - each promotion (publishMembers): the new leader publishes its own
//     address if the log has another, and those of the voters the log
//     has none for, from its static map (a cluster bootstrapped from
//     --cluster-peers gets them there);
//   - RemoveVoter forgets the removed member's address (Client "").

// Member is the payload of an OpMember: a member's client address, or
// with Client "" the forgetting of it.
type Member struct {
	ID     raft.ServerID
	Client string
}

// Errors of the membership calls.
var (
	// ErrUnknownMember: RemoveVoter of an id that is not in the raft
	// configuration.
	ErrUnknownMember = errors.New("cluster: no such member")
	// ErrBadMember: an empty id or address.
	ErrBadMember = errors.New("cluster: a member needs an id, a raft address and a client address")
)

// Bounds of the membership calls.
const (
	// membershipTimeout bounds how long a configuration change or an
	// OpMember waits to be taken by raft (not to commit: a commit needs a
	// quorum, and a leader that loses it steps down, which ends the wait).
	membershipTimeout = 10 * time.Second
	// maxMemberField bounds a member's id and address in the log: far
	// above any host:port or id, low enough that a damaged length is
	// refused rather than allocated.
	maxMemberField = 1024
)

func appendMember(dst []byte, m *Member) []byte {
	dst = appendString(dst, string(m.ID))
	return appendString(dst, m.Client)
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func (d *decoder) member() Member {
	m := Member{ID: raft.ServerID(d.string()), Client: d.string()}
	if d.err == nil && m.ID == "" {
		d.fail("member id")
	}
	return m
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > maxMemberField || n > uint64(len(d.b)) {
		d.fail("member field")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// applyMember records (or forgets) a member's client address; on the
// apply goroutine.
func (f *FSM) applyMember(m *Member) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m.Client == "" {
		delete(f.members, m.ID)
		return
	}
	if f.members == nil {
		f.members = make(map[raft.ServerID]string)
	}
	f.members[m.ID] = m.Client
}

// MemberAddr returns the client address the log recorded for member id.
func (f *FSM) MemberAddr(id raft.ServerID) (string, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	a, ok := f.members[id]
	return a, ok
}

// appendMembers appends the recorded addresses, in id order: a count,
// then id and address of each.
func appendMembers(buf []byte, members map[raft.ServerID]string) []byte {
	ids := make([]raft.ServerID, 0, len(members))
	for id := range members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	buf = binary.AppendUvarint(buf, uint64(len(ids)))
	for _, id := range ids {
		buf = appendMember(buf, &Member{ID: id, Client: members[id]})
	}
	return buf
}

// members decodes what appendMembers wrote.
func (d *decoder) members() map[raft.ServerID]string {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)) { // every member takes two bytes at least
		d.fail("member count")
	}
	var m map[raft.ServerID]string
	for i := uint64(0); i < n && d.err == nil; i++ {
		mb := d.member()
		if d.err != nil || mb.Client == "" {
			d.fail("member")
			break
		}
		if m == nil {
			m = make(map[raft.ServerID]string, n)
		}
		m[mb.ID] = mb.Client
	}
	return m
}

// ClientAddr returns a member's client address, "" when unknown: the
// one the log recorded, else the one this node was started with.
func (n *Node) ClientAddr(id raft.ServerID) string {
	if id == "" {
		return ""
	}
	if a, ok := n.fsm.MemberAddr(id); ok {
		return a
	}
	return n.cfg.ClientAddrs[id]
}

// AddVoter makes the server id, listening for raft on raftAddr and for
// clients on clientAddr, a voting member. It runs on the leader only
// (ErrNotLeader elsewhere): the client address goes through the log
// first, then the configuration change, each waiting for its commit. A
// new member catches up from the leader's log or snapshot; it must run
// with the cluster's --raft-auth-token, and without --cluster-bootstrap.
// Adding a voter that is one already updates its raft address.
func (n *Node) AddVoter(id, raftAddr, clientAddr string) error {
	if id == "" || raftAddr == "" || clientAddr == "" || len(id) > maxMemberField || len(clientAddr) > maxMemberField {
		return ErrBadMember
	}
	if !n.Ready() {
		return ErrNotLeader
	}
	if err := n.publish(Member{ID: raft.ServerID(id), Client: clientAddr}); err != nil {
		return err
	}
	f := n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(raftAddr), 0, membershipTimeout)
	return leaderError(f.Error())
}

// RemoveVoter removes the member id from the cluster, on the leader only
// (ErrNotLeader elsewhere; ErrUnknownMember for an id the configuration
// does not have), waiting for the change to commit; then it forgets the
// member's client address. A leader that removes itself steps down once
// the change commits.
func (n *Node) RemoveVoter(id string) error {
	if !n.Ready() {
		return ErrNotLeader
	}
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return leaderError(err)
	}
	if !slices.ContainsFunc(cf.Configuration().Servers, func(s raft.Server) bool { return s.ID == raft.ServerID(id) }) {
		return ErrUnknownMember
	}
	if err := leaderError(n.raft.RemoveServer(raft.ServerID(id), 0, membershipTimeout).Error()); err != nil {
		return err
	}
	if raft.ServerID(id) != n.cfg.ID && n.Ready() {
		// Best effort: a stale address of a member that left misleads
		// nobody, since only members are looked up.
		_ = n.publish(Member{ID: raft.ServerID(id)})
	}
	return nil
}

// ReadIndex returns nil once it is sure that this node leads and that
// its replica has applied every entry committed before the call (the
// read index of the raft paper, §6.4): a read of the replica after it is
// linearizable. A node that has not finished its promotion does not
// count as leading: its commit index may not cover the earlier terms'
// entries yet.
func (n *Node) ReadIndex() error {
	if !n.Ready() {
		return ErrNotLeader
	}
	commit := n.raft.CommitIndex()
	if err := n.raft.VerifyLeader().Error(); err != nil {
		return leaderError(err)
	}
	if n.raft.AppliedIndex() >= commit {
		return nil
	}
	// Rare: the replica is behind the commit index. A barrier waits for
	// every entry before it to apply.
	return leaderError(n.raft.Barrier(membershipTimeout).Error())
}

// publish proposes one OpMember and waits for its commit.
func (n *Node) publish(m Member) error {
	b := AppendBatch(nil, &Batch{Stamp: n.fsm.Now(), Ops: []Op{{Kind: OpMember, Member: m}}})
	return leaderError(n.raft.Apply(b, membershipTimeout).Error())
}

// publishMembers is a new leader's publication of the client addresses
// the log lacks (see the file comment); a failure is left to the next
// promotion. The first leader of a cluster restored from a backup
// (restored) publishes every member's configured address that differs
// from the log's: the log's are the backup's source's.
func (n *Node) publishMembers(restored bool) {
	cf := n.raft.GetConfiguration()
	if cf.Error() != nil {
		return
	}
	var ops []Op
	for _, s := range cf.Configuration().Servers {
		static := n.cfg.ClientAddrs[s.ID]
		if static == "" {
			continue
		}
		got, ok := n.fsm.MemberAddr(s.ID)
		if !ok || ((restored || s.ID == n.cfg.ID) && got != static) {
			ops = append(ops, Op{Kind: OpMember, Member: Member{ID: s.ID, Client: static}})
		}
	}
	if len(ops) > 0 {
		_ = n.raft.Apply(AppendBatch(nil, &Batch{Stamp: n.fsm.Now(), Ops: ops}), membershipTimeout).Error()
	}
}

// leaderError wraps raft's errors that mean "not (or no longer) the
// leader" in ErrNotLeader, so that callers answer with a redirect.
func leaderError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrLeadershipTransferInProgress), errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w: %v", ErrNotLeader, err)
	}
	return err
}
