package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// A batch is the payload of one raft log entry: the commands the leader
// gathered while the previous entries were in flight (group commit),
// stamped with one cluster-clock instant. Every replica decodes the same
// bytes into the same commands and applies them at that instant, so the
// format is ours, versioned and strict: an unknown format or kind, or
// trailing bytes, stop the replica (ErrBadBatch) rather than let it
// diverge quietly.
//
//	batch := u8 format | varint stamp | uvarint n | n × op
//	op    := u8 kind | fields of the kind
//
// Integers are varints, byte strings are uvarint(len+1) then the bytes,
// with 0 for nil (a request's absent value differs from an empty one).
type Batch struct {
	Stamp timerwheel.Instant
	Ops   []Op
}

// batchFormat is the version byte of the batch encoding.
const batchFormat = 1

// OpKind says what an Op asks of the replicated state.
type OpKind uint8

const (
	// OpInit creates the engine: the first entry a new cluster commits.
	// It carries everything that decides results (limits, profile, the
	// token key, the fence floor), so that no replica reads its own flags
	// or randomness for them.
	OpInit OpKind = iota + 1
	// OpPromote starts a leadership epoch: the sessions of earlier
	// epochs are closed, keeping their holds until their leases end (a
	// failover must not revoke locks), and their waits are cancelled.
	OpPromote
	// OpRequest is a dflockd request of connection Conn.
	OpRequest
	// OpClose is the disconnect cleanup of connection Conn (spec §D.4).
	OpClose
	// OpCancel withdraws connection Conn's parked request (Tag).
	OpCancel
	// OpGC prunes idle keys (spec §D.6).
	OpGC
	// OpOrphanTTL sets how long a closed connection that presented a
	// stable-ref stays an orphan its ref can take over (TTL, 0: none).
	// A new leader proposes its --orphan-ttl before its Promote.
	OpOrphanTTL
	// OpMember records a member's client address (Member; Client ""
	// forgets it), for redirects to members added at run time
	// (members.go).
	OpMember
	// OpForeign is a lock command of a foreign protocol (godistlock) of
	// connection Conn: a tagged acquire, a release or renew by key, a
	// holder query (engine/foreign.go), in Foreign. Added after the
	// format's first release as a new kind, not a new format: logs and
	// snapshots written before it read as they did, and a replica too
	// old to know it stops on the first one (ErrBadBatch) rather than
	// skip it, as for any kind it does not know. A leader proposes one
	// only for a godistlock client (--godistlock-port), so a rolling
	// upgrade works as long as that listener is enabled after it.
	OpForeign
	// OpForceRelease is an operator's release of a key's holders
	// (engine.KindForceRelease): Release says which, Conn is the
	// connection its answer goes to. A new kind, like OpForeign: a
	// replica too old to know it stops on it rather than skip it.
	OpForceRelease
	// OpFenceFloor raises the fence counter to Floor (engine.RaiseFence):
	// the first leader of a cluster restored from a backup proposes it
	// before its Promote (backup.go). A new kind, like OpForeign.
	OpFenceFloor
	// OpTenant bounds the tenant Tenant.Name (an identity with quotas,
	// engine/tenant.go) and, when Conn's connection number is not 0,
	// makes it that connection's: a member proposes it at the auth of a
	// connection whose identity has a locks, waiters or keys quota, ahead
	// of its requests, and again with connection 0 when a reload changes
	// the quotas. A new kind, like OpForeign: a member proposes it only
	// under a policy with such quotas, so a cluster without them upgrades
	// and downgrades as before.
	OpTenant
	opLimit
)

// Op is one replicated command.
type Op struct {
	Kind OpKind
	Conn uint64        // OpRequest, OpClose, OpCancel: epoch<<32 | connection
	Req  vocab.Request // OpRequest
	Tag  uint32        // OpCancel
	Init Init          // OpInit
	TTL  time.Duration // OpOrphanTTL
	// Member: OpMember.
	Member Member
	// Foreign: OpForeign.
	Foreign Foreign
	// Release: OpForceRelease.
	Release ForceRelease
	// Floor: OpFenceFloor.
	Floor uint64
	// Tenant: OpTenant.
	Tenant TenantBounds
}

// TenantBounds names a tenant and its bounds (engine.Tenant.SetLimits):
// claims, queued waiters and keys, 0 = none.
type TenantBounds struct {
	Name                  []byte
	Claims, Waiting, Keys int64
}

// ForceRelease is an operator's release (engine/forcerelease.go).
type ForceRelease struct {
	Semaphore bool   // the semaphores' namespace, not the locks'
	Key       []byte // the key
	Fence     uint64 // the holder to release, 0: every holder
	Who       []byte // who asked, for the event ring
}

// command returns the engine command of the release at now.
func (fr *ForceRelease) command(now timerwheel.Instant) engine.Command {
	c := engine.Command{Kind: engine.KindForceRelease, At: now, Fence: fr.Fence,
		Req: vocab.Request{Op: vocab.OpRelease, Key: fr.Key, Value: fr.Who}}
	if fr.Semaphore {
		c.Req.Op = vocab.OpSemRelease
	}
	return c
}

// Foreign is a foreign protocol's lock command (engine/foreign.go): the
// fields of an engine.Command that those kinds read.
type Foreign struct {
	Kind    engine.Kind // KindTaggedAcquire, KindOwnRelease, KindFenceRenew or KindHolder
	Key     []byte
	Tag     uint32 // KindTaggedAcquire: the session's name for a wait (not 0 when Wait)
	Wait    bool   // KindTaggedAcquire
	Fence   uint64 // KindFenceRenew
	LeaseMs int64  // KindTaggedAcquire, KindFenceRenew: 0 = the default lease
}

// foreignCodes are the log's own bytes for the engine kinds OpForeign
// carries: the log outlives any order of the engine's Kind constants, so
// it names them itself (0 is no kind).
var foreignCodes = [...]engine.Kind{1: engine.KindTaggedAcquire, 2: engine.KindOwnRelease,
	3: engine.KindFenceRenew, 4: engine.KindHolder}

// foreignCode returns the log's byte for k, 0 if OpForeign does not carry k.
func foreignCode(k engine.Kind) byte {
	for c, kk := range foreignCodes {
		if c > 0 && kk == k {
			return byte(c)
		}
	}
	return 0
}

// foreignKind reports whether k is a command kind OpForeign carries.
func foreignKind(k engine.Kind) bool { return foreignCode(k) != 0 }

// Init is the replicated configuration of the engine.
type Init struct {
	Profile          vocab.Profile
	DefaultLease     time.Duration
	MaxLocks         int
	MaxWaiters       int
	KeepOnDisconnect bool
	GCMaxIdle        time.Duration
	MaxKeys          int
	MaxListLength    int
	MaxSubscriptions int
	MaxRegistrations int
	TokenKey         engine.TokenKey
	// FenceFloor: every fence issued is above it; the bootstrapping
	// leader's wall clock (or an imported single-node ceiling), so
	// tokens stay above any a previous deployment issued (spec §C.2).
	FenceFloor uint64
}

// engineConfig returns the engine configuration Init describes; local
// holds the fields that are each replica's own (shards, deadline hook).
func (in *Init) engineConfig(local engine.Config) engine.Config {
	local.Profile = in.Profile
	local.DefaultLease = in.DefaultLease
	local.MaxLocks = in.MaxLocks
	local.MaxWaiters = in.MaxWaiters
	local.KeepOnDisconnect = in.KeepOnDisconnect
	local.GCMaxIdle = in.GCMaxIdle
	local.MaxKeys = in.MaxKeys
	local.MaxListLength = in.MaxListLength
	local.MaxSubscriptions = in.MaxSubscriptions
	local.MaxRegistrations = in.MaxRegistrations
	local.TokenKey = in.TokenKey
	local.FenceFloor = in.FenceFloor
	local.Ceiling = nil // the raft log is the durability of fences
	return local
}

// ErrBadBatch is returned for bytes that are not a batch this replica can
// apply exactly as every other would.
var ErrBadBatch = errors.New("cluster: undecodable batch")

// AppendBatch appends the encoding of b to dst.
func AppendBatch(dst []byte, b *Batch) []byte {
	dst = append(dst, batchFormat)
	dst = binary.AppendVarint(dst, int64(b.Stamp))
	dst = binary.AppendUvarint(dst, uint64(len(b.Ops)))
	for i := range b.Ops {
		dst = appendOp(dst, &b.Ops[i])
	}
	return dst
}

func appendOp(dst []byte, op *Op) []byte {
	dst = append(dst, byte(op.Kind))
	switch op.Kind {
	case OpInit:
		in := &op.Init
		dst = binary.AppendUvarint(dst, uint64(in.Profile))
		for _, v := range []int64{int64(in.DefaultLease), int64(in.MaxLocks), int64(in.MaxWaiters),
			b2i(in.KeepOnDisconnect), int64(in.GCMaxIdle), int64(in.MaxKeys), int64(in.MaxListLength),
			int64(in.MaxSubscriptions), int64(in.MaxRegistrations)} {
			dst = binary.AppendVarint(dst, v)
		}
		dst = append(dst, in.TokenKey[:]...)
		dst = binary.AppendUvarint(dst, in.FenceFloor)
	case OpPromote, OpGC:
	case OpRequest:
		// conn | the request in vocab's encoding, the NilAware form
		dst = binary.AppendUvarint(dst, op.Conn)
		dst = vocab.AppendRequest(dst, &op.Req, vocab.NilAware)
	case OpClose:
		dst = binary.AppendUvarint(dst, op.Conn)
	case OpCancel:
		dst = binary.AppendUvarint(dst, op.Conn)
		dst = binary.AppendUvarint(dst, uint64(op.Tag))
	case OpOrphanTTL:
		dst = binary.AppendVarint(dst, int64(op.TTL))
	case OpMember:
		dst = appendMember(dst, &op.Member)
	case OpFenceFloor:
		dst = binary.AppendUvarint(dst, op.Floor)
	case OpForceRelease:
		// conn | u8 semaphore | key | who | uvarint fence
		fr := &op.Release
		dst = binary.AppendUvarint(dst, op.Conn)
		dst = append(dst, byte(b2i(fr.Semaphore)))
		dst = appendBytes(dst, fr.Key)
		dst = appendBytes(dst, fr.Who)
		dst = binary.AppendUvarint(dst, fr.Fence)
	case OpTenant:
		// conn | name | varint claims | varint waiting | varint keys
		tb := &op.Tenant
		dst = binary.AppendUvarint(dst, op.Conn)
		dst = appendBytes(dst, tb.Name)
		dst = binary.AppendVarint(dst, tb.Claims)
		dst = binary.AppendVarint(dst, tb.Waiting)
		dst = binary.AppendVarint(dst, tb.Keys)
	case OpForeign:
		// conn | u8 engine kind | key | uvarint tag | u8 wait | uvarint fence | varint lease ms
		fo := &op.Foreign
		dst = binary.AppendUvarint(dst, op.Conn)
		dst = append(dst, foreignCode(fo.Kind))
		dst = appendBytes(dst, fo.Key)
		dst = binary.AppendUvarint(dst, uint64(fo.Tag))
		dst = append(dst, byte(b2i(fo.Wait)))
		dst = binary.AppendUvarint(dst, fo.Fence)
		dst = binary.AppendVarint(dst, fo.LeaseMs)
	default:
		panic(fmt.Sprintf("cluster: encoding an op of unknown kind %d", op.Kind))
	}
	return dst
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return append(dst, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(len(b))+1)
	return append(dst, b...)
}

// DecodeBatch decodes one batch. The ops' byte strings are copies: the
// engine keeps what it is given.
//
// The byte fields of the ops it returns (keys, tokens, values) are
// slices of data, which must not change while they are in use.
func DecodeBatch(data []byte) (Batch, error) { return decodeBatch(data, nil) }

// decodeBatch is DecodeBatch with the ops decoded into ops' storage,
// which the applier reuses from entry to entry: a batch of a busy leader
// carries hundreds of ops, and a fresh slice for each entry on every
// member was a good part of a cluster's garbage.
func decodeBatch(data []byte, ops []Op) (Batch, error) {
	d := decoder{b: data}
	if f := d.byte(); d.err != nil || f != batchFormat {
		return Batch{}, fmt.Errorf("%w: format %d", ErrBadBatch, f)
	}
	b := Batch{Stamp: timerwheel.Instant(d.varint())}
	n := d.uvarint()
	if d.err == nil && n > uint64(len(data)) { // every op takes a byte at least
		d.fail("op count")
	}
	if d.err == nil {
		if uint64(cap(ops)) >= n {
			b.Ops = ops[:0]
		} else {
			b.Ops = make([]Op, 0, n)
		}
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		b.Ops = b.Ops[:i+1] // within cap: room for n was made above
		d.opInto(&b.Ops[i])
	}
	if d.err == nil && len(d.b) > 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return Batch{}, d.err
	}
	return b, nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrBadBatch, what)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.fail("short")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n == 0 || d.err != nil {
		return nil
	}
	n--
	if n > uint64(len(d.b)) {
		d.fail("short string")
		return nil
	}
	// A slice of the entry, not a copy (DecodeBatch); its capacity ends
	// with it, so that an append by a user cannot overwrite what follows.
	b := d.b[:n:n]
	d.b = d.b[n:]
	return b
}

func (d *decoder) op() Op {
	var op Op
	d.opInto(&op)
	return op
}

// opInto decodes an op into *op, which it overwrites whole: decodeBatch
// decodes straight into the batch's slice, reused from entry to entry,
// rather than copying a 440-byte Op out of op() and into it (issue #21).
func (d *decoder) opInto(op *Op) {
	*op = Op{Kind: OpKind(d.byte())}
	switch op.Kind {
	case OpInit:
		in := &op.Init
		p := d.uvarint()
		in.Profile = vocab.Profile(p)
		var v [9]int64
		for i := range v {
			v[i] = d.varint()
		}
		in.DefaultLease, in.MaxLocks, in.MaxWaiters = time.Duration(v[0]), int(v[1]), int(v[2])
		in.KeepOnDisconnect, in.GCMaxIdle, in.MaxKeys = v[3] != 0, time.Duration(v[4]), int(v[5])
		in.MaxListLength, in.MaxSubscriptions, in.MaxRegistrations = int(v[6]), int(v[7]), int(v[8])
		if len(d.b) < len(in.TokenKey) {
			d.fail("short token key")
			return
		}
		copy(in.TokenKey[:], d.b)
		d.b = d.b[len(in.TokenKey):]
		in.FenceFloor = d.uvarint()
		if p > 255 || v[3] > 1 || v[3] < 0 {
			d.fail("init fields")
		}
	case OpPromote, OpGC:
	case OpRequest:
		op.Conn = d.uvarint()
		if d.err != nil {
			return
		}
		n, err := vocab.ReadRequest(d.b, &op.Req, vocab.NilAware)
		if err != nil {
			d.fail("request")
			return
		}
		d.b = d.b[n:]
		if !replicated(op.Req.Op) {
			d.fail("request op " + fmt.Sprint(uint8(op.Req.Op)))
		}
	case OpClose:
		op.Conn = d.uvarint()
	case OpCancel:
		op.Conn = d.uvarint()
		t := d.uvarint()
		if t > 1<<32-1 {
			d.fail("tag")
		}
		op.Tag = uint32(t)
	case OpOrphanTTL:
		op.TTL = time.Duration(d.varint())
		if op.TTL < 0 {
			d.fail("orphan ttl")
		}
	case OpMember:
		op.Member = d.member()
	case OpFenceFloor:
		op.Floor = d.uvarint()
	case OpForceRelease:
		op.Conn = d.uvarint()
		fr := &op.Release
		sem := d.byte()
		fr.Key, fr.Who, fr.Fence = d.bytes(), d.bytes(), d.uvarint()
		fr.Semaphore = sem == 1
		if d.err == nil && (sem > 1 || len(fr.Key) == 0) {
			d.fail("force release fields")
		}
	case OpTenant:
		op.Conn = d.uvarint()
		tb := &op.Tenant
		tb.Name = d.bytes()
		tb.Claims, tb.Waiting, tb.Keys = d.varint(), d.varint(), d.varint()
		if d.err == nil && (len(tb.Name) == 0 || tb.Claims < 0 || tb.Waiting < 0 || tb.Keys < 0) {
			d.fail("tenant fields")
		}
	case OpForeign:
		op.Conn = d.uvarint()
		fo := &op.Foreign
		code := d.byte()
		if int(code) < len(foreignCodes) {
			fo.Kind = foreignCodes[code]
		}
		fo.Key = d.bytes()
		t := d.uvarint()
		w := d.byte()
		fo.Fence, fo.LeaseMs = d.uvarint(), d.varint()
		fo.Tag, fo.Wait = uint32(t), w == 1
		switch {
		case d.err != nil:
		case code == 0 || int(code) >= len(foreignCodes):
			d.fail(fmt.Sprintf("foreign kind %d", code))
		case t > 1<<32-1 || w > 1 || (fo.Wait && fo.Tag == 0) ||
			fo.LeaseMs < 0 || fo.LeaseMs > parse.MaxGodistlockLeaseMs:
			// The engine panics on a wait with tag 0, and a lease past
			// the grammar's bound would overflow the clock: refuse them
			// here, where every replica refuses them alike.
			d.fail("foreign fields")
		}
	default:
		d.fail(fmt.Sprintf("op kind %d", op.Kind))
	}
}

// replicated reports whether op is a request the cluster runs through
// its log: every engine request but stats, which a node answers from its
// own replica (ping and auth never reach the engine); stable-ref, which
// the replicated state keeps for its connection, and barrier, a no-op
// whose application answers it, go through the log too.
func replicated(op vocab.Op) bool {
	switch op {
	case vocab.OpUnknown, vocab.OpPing, vocab.OpStats, vocab.OpAuth:
		return false
	}
	return int(op) < vocab.NumOps
}
