// Package client is the Go client of dflockd-ng and of dflockd: locks,
// semaphores, read-write locks, counters, a key-value store, lists,
// pub/sub signals, key watches, barriers and leader election over
// dflockd's line protocol.
//
// # Drop-in for dflockd's client
//
// The package offers the exported API of dflockd's own client,
// github.com/mtingers/dflockd/client, of both its main line and its
// redis-feats line, with the same signatures and semantics: a program
// written for it switches by changing the import path. Low-level functions
// take a *Conn and send one request each (Acquire, Release, Renew,
// Enqueue, Wait, the Sem… family, the …WithFence variants, RLock and the
// read-write family, Incr, KVSet, LPush, BLPop, Emit, BarrierWait, …);
// high-level types (Lock, Semaphore, RWLock, Election) dial a connection
// per hold and renew its lease in the background; SignalConn, WatchConn
// and LeaderConn deliver pushes on channels. Errors are the same sentinel
// values (ErrTimeout, ErrNotFound, …), returned unwrapped where dflockd's
// client returns them unwrapped, so both errors.Is and == keep working.
// Their text starts with "client:" rather than "dflockd:".
//
// Fences: dflockd v2 and dflockd-ng put the fence in the token's first 16
// hex digits (FenceFromToken); redis-feats servers, and dflockd-ng with
// --compat=rf, also send it as a separate field, which the …WithFence
// functions return (0 when absent). The Fence methods of Lock, Semaphore,
// RWLock and Election return it whichever way the server sends it: the
// field, or the token's own where the server's tokens carry their fence
// (asked once per connection); 0 means none (servers with random tokens).
//
// # Usage
//
// A lock held while a job runs, given up as soon as it is lost:
//
//	l := &client.Lock{Key: "nightly-report", LeaseTTL: 15, Servers: []string{"10.0.0.1:6388"}}
//	ok, err := l.Acquire(ctx) // waits up to AcquireTimeout (10 s); false: someone else holds it
//	if err != nil || !ok {
//		return err
//	}
//	defer l.Release(ctx)
//	jobCtx, cancel := context.WithCancel(ctx)
//	defer cancel()
//	go func() {
//		select {
//		case <-l.Lost(): // the lease could not be kept: stop writing
//			log.Printf("lost: %v (fence was %d)", l.Err(), l.Fence())
//			cancel()
//		case <-jobCtx.Done():
//		}
//	}()
//	runJob(jobCtx, l.Fence()) // pass the fence to what the lock protects
//
// A raft cluster of dflockd-ng members: Cluster returns a Dialer in
// cluster mode, which Lock (and Semaphore, RWLock, Election, Client) take:
//
//	members := client.Cluster("10.0.0.1:6388", "10.0.0.2:6388", "10.0.0.3:6388")
//	members.StableRef = "report-host-7" // optional: with the servers' --orphan-ttl
//	l := &client.Lock{Key: "nightly-report", LeaseTTL: 15, Dialer: members}
//
//	c, err := members.Dial(ctx, "")          // a Conn: its requests follow the leader
//	n, err := client.Incr(c, "deploys", 1)   // sent to the leader, waiting for one in an election
//
// Failover: when the leader dies or steps down, the cluster keeps the
// holds it granted until their leases end, renewable by token. A request
// waits for the next leader (Dialer.LeaderWait, 10 s by default) rather
// than failing on the dead one's refused connections, and a held Lock
// connects again, renews by token on the new leader and goes on renewing
// there: Lost stays open, Token and Fence stay the same. Lost is closed,
// with Err saying why, only when the hold is really gone: the new leader
// refuses the renewal (the lease ran out, another client holds the key),
// or no renewal succeeded before the lease would have ended. An Acquire
// (of a Lock, Semaphore, RWLock or Election) that is waiting in the queue
// when its connection breaks connects again, waiting for the next leader
// as a request does, and waits there for what is left of its
// AcquireTimeout; it reports a grant only when one reaches it. The wait
// it leaves behind cannot keep the key: the new leader withdraws the old
// leader's waits, and a grant the old leader made just before dying,
// which never reached the client, is held only until its lease ends. With
// Dialer.StableRef set, every connection presents the ref, so a cluster
// started with --orphan-ttl hands the old connection's holds and queue
// places over to the new one: the acquire sent again keeps its place in
// the queue, or gets the grant it never read.
//
// # Beyond dflockd's client
//
//   - Context everywhere: Conn.WithContext binds a context to every request
//     made through the returned Conn, so all functions above honour
//     cancellation and deadlines; the high-level types take one per call.
//   - Lost holds are reported at once: Lock.Lost (and the same method of
//     Semaphore, RWLock, Election) returns a channel closed as soon as a
//     renewal fails or, on a single server, the connection breaks.
//   - Connection reuse: a Conn pipelines requests from many goroutines, and
//     Client shares one connection per server, dialling again when one
//     ends. Keepalive pings stop the server's read timeout from dropping
//     idle connections and their subscriptions.
//   - Cluster mode (Cluster, or Dialer.Members): a request refused with
//     error_not_leader <addr> is resent to that leader, only if it is one
//     of the members, at most Dialer.MaxRedirects times; while no leader
//     can be reached the members are tried in turn for up to
//     Dialer.LeaderWait; holds ride through failovers; Dialer.StableRef
//     sends stable-ref for --orphan-ttl re-adoption.
//   - TLS and auth for every connection through Dialer, including those
//     made to follow redirects; Conn.Do for any command by name.
//
// # Concurrency
//
// A Conn is safe for concurrent use; replies are matched to requests in
// order. The server serves one request of a connection at a time, so a
// request that blocks (a lock wait, a blocking pop, a barrier) delays the
// requests behind it: give blocking work its own connection. Cancelling a
// request in flight closes its connection, because the protocol cannot
// withdraw a request; the server then releases what the connection held.
// The high-level types are safe for concurrent use too, but one value
// tracks one hold at a time.
//
// The package knows nothing of any server's internals: it speaks the wire
// protocol only, and is tested against the dflockd-ng binary.
package client
