package httpapi

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dflockd-ng/dflockd/cluster"
	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// The HTTP API on cluster members, in process: raft over its in-memory
// transport, each member's API on a loopback listener, answers checked
// against the OpenAPI document as everywhere (validatingTransport).

// member is one cluster member with its HTTP API.
type member struct {
	*testServer
	id    raft.ServerID
	addr  raft.ServerAddress
	trans *raft.InmemTransport
	node  *cluster.Node
}

// replica is the node as the hub sees it (cmd/dflockd's, with Cancel).
type replica struct{ node *cluster.Node }

func (r *replica) Submit(conn uint32, req *vocab.Request) error { return r.node.Submit(conn, req) }
func (r *replica) SubmitForeign(conn uint32, c *engine.Command) error {
	return r.node.SubmitForeign(conn, c)
}
func (r *replica) ForceRelease(conn uint32, c *engine.Command) error {
	return r.node.ForceRelease(conn, c)
}
func (r *replica) Close(conn uint32) { r.node.Close(conn) }

func (r *replica) SetTenant(conn uint32, name string, claims, waiting, keys int64) error {
	return r.node.SetTenant(conn, name, claims, waiting, keys)
}
func (r *replica) Cancel(conn, tag uint32) error     { return r.node.Cancel(conn, tag) }
func (r *replica) Engine() *engine.Engine            { return r.node.Engine() }
func (r *replica) Now() timerwheel.Instant           { return r.node.Now() }
func (r *replica) Leading() bool                     { return r.node.Leading() }
func (r *replica) LeaderAddr() string                { return r.node.LeaderAddr() }
func (r *replica) ClusterStats() *vocab.ClusterStats { return r.node.ClusterStats() }

// clientAddr is the (fake) client address of member id, for redirects.
func clientAddr(id raft.ServerID) string { return "client-" + string(id) + ":6388" }

// startCluster starts n bootstrapped members, every API configured by
// cfg (Cluster is set here).
func startCluster(t *testing.T, n int, cfg Config) []*member {
	t.Helper()
	var ms []*member
	var servers []raft.Server
	addrs := map[raft.ServerID]string{}
	for i := range n {
		m := &member{id: raft.ServerID(fmt.Sprint("n", i+1))}
		m.addr, m.trans = raft.NewInmemTransport("")
		servers = append(servers, raft.Server{ID: m.id, Address: m.addr})
		addrs[m.id] = clientAddr(m.id)
		ms = append(ms, m)
	}
	connect(ms)
	for _, m := range ms {
		startMember(t, m, addrs, cfg)
		if err := m.node.Bootstrap(servers); err != nil {
			t.Fatal(err)
		}
	}
	return ms
}

func connect(ms []*member) {
	for _, a := range ms {
		for _, b := range ms {
			if a != b {
				a.trans.Connect(b.addr, b.trans)
			}
		}
	}
}

// startMember starts m's node, hub and API; the test's cleanup stops
// them, the API first (its sessions close through the log).
func startMember(t *testing.T, m *member, addrs map[raft.ServerID]string, cfg Config) {
	t.Helper()
	r := &replica{}
	hub := session.NewClusterHub(session.Config{ReadTimeout: time.Minute}, r, timerwheel.NewMonoClock())
	rc := cluster.DefaultRaft()
	// Not shorter: under load (the race detector, two shared cores) a
	// node's goroutines stall for over 100 ms at times, and with
	// shorter timeouts leaders change under tests that rightly expect
	// them to stay (cluster's fastRaft).
	rc.HeartbeatTimeout, rc.ElectionTimeout = 500*time.Millisecond, 500*time.Millisecond
	rc.LeaderLeaseTimeout, rc.CommitTimeout = 250*time.Millisecond, 5*time.Millisecond
	rc.Logger = hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Off})
	logs := raft.NewInmemStore()
	node, err := cluster.New(cluster.Config{ID: m.id, Transport: m.trans, Logs: logs, Stable: logs,
		Snapshots: raft.NewInmemSnapshotStore(), Raft: rc, Output: hub, ClientAddrs: addrs,
		ClockTick: 50 * time.Millisecond, Init: cluster.Init{DefaultLease: 30 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	r.node, m.node = node, node
	ts := &testServer{t: t, hub: hub, reg: prometheus.NewRegistry()}
	cfg.Cluster = node
	cfg.Registerer = ts.reg
	cfg.Metrics = promhttp.HandlerFor(ts.reg, promhttp.HandlerOpts{})
	cfg.Logf = t.Logf
	ts.api = New(hub, cfg)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.addr, ts.url = l.Addr().String(), "http://"+l.Addr().String()
	done := make(chan error, 1)
	go func() { done <- ts.api.Serve(l) }()
	ts.tr = &http.Transport{MaxIdleConnsPerHost: 16}
	// A bound on every call: a call the log never answers fails the test
	// instead of hanging it.
	ts.c = &http.Client{Transport: &validatingTransport{base: ts.tr, t: t}, Timeout: 25 * time.Second}
	m.testServer = ts
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := ts.api.Shutdown(ctx); err != nil {
			t.Errorf("%s: Shutdown: %v", m.id, err)
		}
		if err := <-done; err != nil {
			t.Errorf("%s: Serve: %v", m.id, err)
		}
		ts.tr.CloseIdleConnections()
		_ = node.Shutdown()
	})
}

// leaderOf waits for the member that leads and takes requests.
func leaderOf(t *testing.T, ms []*member) *member {
	t.Helper()
	var l *member
	eventually(t, "a ready leader", func() bool {
		for _, m := range ms {
			if m.node.Ready() {
				l = m
				return true
			}
		}
		return false
	})
	return l
}

// expectNotLeader checks a 503 not_leader naming leader's client address.
func expectNotLeader(t *testing.T, what string, r *reply, leader *member) {
	t.Helper()
	expect(t, what, r, 503, codeNotLeader)
	if got := r.header.Get(leaderHeader); got != clientAddr(leader.id) {
		t.Fatalf("%s: %s %q, want %q", what, leaderHeader, got, clientAddr(leader.id))
	}
}

// TestClusterFollowersRedirect: on a follower, sessions and lock calls
// answer 503 not_leader with the leader's client address; the reads
// (stats with its cluster object, health, ready, metrics) are served.
func TestClusterFollowersRedirect(t *testing.T) {
	ms := startCluster(t, 3, Config{})
	l := leaderOf(t, ms)
	sid := l.newSession()
	for _, f := range ms {
		if f == l {
			continue
		}
		eventually(t, "the follower to know its leader", func() bool { return f.node.LeaderAddr() != "" })
		expectNotLeader(t, "POST /v1/sessions", f.send(req{method: "POST", path: "/v1/sessions"}), l)
		expectNotLeader(t, "lock", f.send(req{method: "POST", path: "/v1/locks/k", session: sid,
			body: map[string]int64{"acquire_timeout_s": 0}}), l)
		expectNotLeader(t, "semaphore release", f.send(req{method: "POST", path: "/v1/semaphores/k/release",
			session: sid, body: map[string]string{"token": "x"}}), l)
		expectNotLeader(t, "DELETE session", f.send(req{method: "DELETE", path: "/v1/sessions/" + sid}), l)
		expectNotLeader(t, "ping session", f.send(req{method: "POST", path: "/v1/sessions/" + sid + "/ping"}), l)
		expectNotLeader(t, "readindex", f.send(req{method: "GET", path: "/v1/readindex"}), l)
		for _, p := range []string{"/health", "/ready", "/metrics"} {
			expect(t, p, f.send(req{method: "GET", path: p}), 200, "")
		}
		var st struct {
			Cluster vocab.ClusterStats `json:"cluster"`
		}
		f.send(req{method: "GET", path: "/v1/stats"}).decode(t, &st)
		if st.Cluster.NodeID != string(f.id) || st.Cluster.Role != "follower" || st.Cluster.LeaderAddr != clientAddr(l.id) ||
			len(st.Cluster.Voters) != 3 {
			t.Fatalf("follower %s stats: %+v", f.id, st.Cluster)
		}
	}
	expect(t, "readindex on the leader", l.send(req{method: "GET", path: "/v1/readindex"}), 200, "")
	// A single node has no read index.
	expect(t, "readindex on a single node", newServer(t, setup{}).send(req{method: "GET", path: "/v1/readindex"}), 404, codeNotFound)
}

// waiters is key's waiter count in m's replica (0 if key is idle).
func (m *member) waiters(key string) int {
	e := m.hub.Engine()
	if e == nil {
		return 0
	}
	for _, l := range e.LockStats(m.node.Now(), 0).Locks {
		if l.Key == key {
			return l.Waiters
		}
	}
	return 0
}

// held reports whether key is held in m's replica.
func (m *member) held(key string) bool {
	e := m.hub.Engine()
	if e == nil {
		return false
	}
	for _, l := range e.LockStats(m.node.Now(), 0).Locks {
		if l.Key == key && l.OwnerConnID != 0 {
			return true
		}
	}
	return false
}

// TestClusterLockCallsGoThroughTheLog: on the leader, locks and
// semaphores work as on a single node, and every member's replica sees
// them; a blocking acquire is granted when the holder releases.
func TestClusterLockCallsGoThroughTheLog(t *testing.T) {
	ms := startCluster(t, 3, Config{})
	l := leaderOf(t, ms)
	a, b := l.newSession(), l.newSession()
	g := l.lock(a, "k", 0)
	if g.Status != "ok" || len(g.Token) != 32 || g.LeaseTTLS != 30 {
		t.Fatalf("grant %+v", g)
	}
	for _, m := range ms {
		eventually(t, "k held on "+string(m.id), func() bool { return m.held("k") })
	}
	if g := l.lock(b, "k", 0); g.Status != "timeout" {
		t.Fatalf("second try-lock: %+v", g)
	}
	waiting := async(func() grant { return l.lock(b, "k", 10) })
	eventually(t, "b to queue", func() bool { return l.waiters("k") == 1 })
	r := l.send(req{method: "POST", path: "/v1/locks/k/renew", session: a, body: map[string]any{"token": g.Token, "lease_ttl_s": 40}})
	expect(t, "renew", r, 200, "")
	l.release(a, "k", g.Token)
	if g2 := await(t, "b's grant", waiting); g2.Status != "ok" || g2.Token == g.Token {
		t.Fatalf("b's grant %+v after %s", g2, g.Token)
	}
	expect(t, "release of a stale token", l.send(req{method: "POST", path: "/v1/locks/k/release", session: a,
		body: map[string]string{"token": g.Token}}), 404, codeNotHeld)

	// Semaphores and the two-phase acquire.
	if g := l.call(a, "/v1/semaphores/s", map[string]int64{"acquire_timeout_s": 0, "limit": 2}); g.Status != "ok" {
		t.Fatalf("semaphore: %+v", g)
	}
	if g := l.call(a, "/v1/locks/q/enqueue", nil); g.Status != "acquired" {
		t.Fatalf("enqueue: %+v", g)
	}
	if g := l.call(b, "/v1/locks/q/enqueue", nil); g.Status != "queued" {
		t.Fatalf("second enqueue: %+v", g)
	}
	if g := l.call(b, "/v1/locks/q/wait", map[string]int64{"timeout_s": 0}); g.Status != "timeout" {
		t.Fatalf("wait: %+v", g)
	}
	// DELETE closes the session through the log: its holds go.
	expect(t, "DELETE", l.send(req{method: "DELETE", path: "/v1/sessions/" + b}), 204, "")
	for _, m := range ms {
		eventually(t, "k released on "+string(m.id), func() bool { return !m.held("k") })
	}
}

// TestClusterClientGoneWithdraws: a client that leaves a blocking call
// withdraws it from the replicated queue, and its session goes on.
func TestClusterClientGoneWithdraws(t *testing.T) {
	ms := startCluster(t, 3, Config{})
	l := leaderOf(t, ms)
	a, b := l.newSession(), l.newSession()
	g := l.lock(a, "k", 0)
	ctx, cancel := context.WithCancel(context.Background())
	gone := async(func() error {
		_, err := l.trySend(req{method: "POST", path: "/v1/locks/k", session: b, ctx: ctx,
			body: map[string]int64{"acquire_timeout_s": 30}})
		return err
	})
	eventually(t, "b to queue", func() bool { return l.waiters("k") == 1 })
	cancel()
	if err := await(t, "the canceled call", gone); !errCanceled(err) {
		t.Fatalf("canceled call: %v", err)
	}
	for _, m := range ms {
		eventually(t, "b's wait withdrawn on "+string(m.id), func() bool { return m.waiters("k") == 0 })
	}
	l.release(a, "k", g.Token)
	for _, m := range ms {
		eventually(t, "k free on "+string(m.id), func() bool { return !m.held("k") })
	}
	// b's session is not stuck behind the withdrawn wait.
	if g := l.lock(b, "k", 0); g.Status != "ok" {
		t.Fatalf("b after its withdrawal: %+v", g)
	}
}

// TestClusterDeposedLeaderAnswersNotLeader: a call waiting on a leader
// that hands its leadership over ends 503 not_leader, naming the new
// leader, and so does the next call there.
func TestClusterDeposedLeaderAnswersNotLeader(t *testing.T) {
	ms := startCluster(t, 3, Config{})
	l := leaderOf(t, ms)
	a, b := l.newSession(), l.newSession()
	l.lock(a, "k", 0)
	waiting := async(func() *reply {
		return l.send(req{method: "POST", path: "/v1/locks/k", session: b, body: map[string]int64{"acquire_timeout_s": 30}})
	})
	eventually(t, "b to queue", func() bool { return l.waiters("k") == 1 })
	if err := l.node.TransferLeadership(); err != nil {
		t.Fatal(err)
	}
	r := await(t, "the waiting call", waiting)
	expect(t, "the waiting call", r, 503, codeNotLeader)
	var next *member
	eventually(t, "a new leader", func() bool {
		for _, m := range ms {
			if m != l && m.node.Ready() {
				next = m
				return true
			}
		}
		return false
	})
	eventually(t, "the old leader to know the new one", func() bool { return l.node.LeaderAddr() == clientAddr(next.id) })
	expectNotLeader(t, "a lock call on the old leader", l.send(req{method: "POST", path: "/v1/locks/k", session: a,
		body: map[string]int64{"acquire_timeout_s": 0}}), next)
}

// TestClusterAdmin: the admin routes' token, follower and leader
// answers, and a member added and removed.
func TestClusterAdmin(t *testing.T) {
	admin := func(token string) map[string]string { return map[string]string{adminHeader: token} }
	body := map[string]string{"node_id": "n4", "raft_addr": "a:1", "client_addr": "b:2"}

	off := startCluster(t, 1, Config{})
	leaderOf(t, off)
	expect(t, "no admin token", off[0].send(req{method: "POST", path: "/v1/admin/voters", body: body, header: admin("x")}), 503, codeAdminDisabled)
	expect(t, "no admin token", off[0].send(req{method: "DELETE", path: "/v1/admin/voters/n4", header: admin("x")}), 503, codeAdminDisabled)
	expect(t, "single node", newServer(t, setup{cfg: Config{AdminToken: "s3cret"}}).send(req{method: "DELETE",
		path: "/v1/admin/voters/n4", header: admin("s3cret")}), 404, codeNotFound)

	ms := startCluster(t, 3, Config{AdminToken: "s3cret"})
	l := leaderOf(t, ms)
	start := time.Now()
	expect(t, "wrong token", l.send(req{method: "POST", path: "/v1/admin/voters", body: body, header: admin("S3cret")}), 401, codeUnauthorized)
	expect(t, "no token", l.send(req{method: "DELETE", path: "/v1/admin/voters/n4"}), 401, codeUnauthorized)
	if d := time.Since(start); d < 2*authFailDelay*time.Millisecond {
		t.Fatalf("two refusals took %v, want at least %d ms each", d, authFailDelay)
	}
	for _, f := range ms {
		if f != l {
			eventually(t, "the follower to know its leader", func() bool { return f.node.LeaderAddr() != "" })
			expectNotLeader(t, "add on a follower", f.send(req{method: "POST", path: "/v1/admin/voters", body: body, header: admin("s3cret")}), l)
		}
	}
	for _, bad := range []any{
		map[string]string{"node_id": "n4", "raft_addr": "a:1"},
		map[string]string{"node_id": "n 4", "raft_addr": "a:1", "client_addr": "b:2"},
		map[string]string{"node_id": "n4", "raft_addr": "a", "client_addr": "b:2"},
		map[string]string{"node_id": "n4", "raft_addr": "a:1", "client_addr": "b:0"},
		map[string]string{"node_id": "n4", "raft_addr": "a:1", "client_addr": "b:2", "extra": "x"},
	} {
		expect(t, fmt.Sprint(bad), l.send(req{method: "POST", path: "/v1/admin/voters", body: bad, header: admin("s3cret")}), 400, codeBadRequest)
	}
	expect(t, "remove a stranger", l.send(req{method: "DELETE", path: "/v1/admin/voters/n9", header: admin("s3cret")}), 404, codeNotFound)

	// A fourth member on empty stores, knowing only its own address.
	n4 := &member{id: "n4"}
	n4.addr, n4.trans = raft.NewInmemTransport("127.0.0.1:7004") // an address as the admin route takes
	all := append(ms, n4)
	connect(all)
	startMember(t, n4, map[raft.ServerID]string{"n4": clientAddr("n4")}, Config{AdminToken: "s3cret"})
	r := l.send(req{method: "POST", path: "/v1/admin/voters", header: admin("s3cret"),
		body: map[string]string{"node_id": "n4", "raft_addr": string(n4.addr), "client_addr": clientAddr("n4")}})
	expect(t, "add n4", r, 200, "")
	var vr voterReply
	r.decode(t, &vr)
	if vr != (voterReply{Status: "ok", NodeID: "n4"}) {
		t.Fatalf("add: %+v", vr)
	}
	eventually(t, "n4 to catch up", func() bool {
		return n4.node.Raft().AppliedIndex() >= l.node.Raft().CommitIndex() && n4.node.LeaderAddr() == clientAddr(l.id)
	})
	expectNotLeader(t, "n4's redirect", n4.send(req{method: "POST", path: "/v1/sessions"}), l)
	if st := l.node.ClusterStats(); len(st.Voters) != 4 || st.Voters[3].ClientAddr != clientAddr("n4") {
		t.Fatalf("voters %+v", st.Voters)
	}
	expect(t, "remove n4", l.send(req{method: "DELETE", path: "/v1/admin/voters/n4", header: admin("s3cret")}), 200, "")
	if st := l.node.ClusterStats(); len(st.Voters) != 3 {
		t.Fatalf("voters after the removal: %+v", st.Voters)
	}
	if !strings.Contains(string(l.send(req{method: "GET", path: "/metrics"}).body), "dflockd_http_requests_total") {
		t.Fatal("no HTTP metrics on a cluster member")
	}
}

// TestClusterForceRelease: an operator's force release goes through the
// log: a follower refuses it naming the leader; on the leader it
// releases the holder, the FIFO moves on in every replica, and the old
// holder's renew finds nothing.
func TestClusterForceRelease(t *testing.T) {
	admin := map[string]string{adminHeader: "s3cret"}
	ms := startCluster(t, 3, Config{AdminToken: "s3cret"})
	l := leaderOf(t, ms)
	a, b := l.newSession(), l.newSession()
	g := l.lock(a, "k", 0)
	if g.Status != "ok" {
		t.Fatalf("grant %+v", g)
	}
	waiting := async(func() grant { return l.lock(b, "k", 30) })
	for _, m := range ms {
		eventually(t, "k held with b queued on "+string(m.id), func() bool { return m.held("k") && m.waiters("k") == 1 })
	}
	for _, f := range ms {
		if f != l {
			eventually(t, "the follower to know its leader", func() bool { return f.node.LeaderAddr() != "" })
			expectNotLeader(t, "force release on a follower", f.send(req{method: "POST",
				path: "/v1/admin/locks/k/release", header: admin}), l)
		}
	}
	if !l.held("k") || l.waiters("k") != 1 {
		t.Fatal("a follower's refused force release changed the state")
	}
	r := l.send(req{method: "POST", path: "/v1/admin/locks/k/release?reason=stuck", header: admin})
	expect(t, "force release on the leader", r, 200, "")
	var fr forceReleaseReply
	r.decode(t, &fr)
	if fr.Key != "k" || fr.Released != 1 {
		t.Fatalf("force release answered %+v, want k with 1 released", fr)
	}
	if g2 := await(t, "b's grant after the force release", waiting); g2.Status != "ok" || g2.Token == g.Token {
		t.Fatalf("b's grant %+v after %s", g2, g.Token)
	}
	for _, m := range ms {
		eventually(t, "k held by b alone on "+string(m.id), func() bool { return m.held("k") && m.waiters("k") == 0 })
	}
	expect(t, "the old holder's renew", l.send(req{method: "POST", path: "/v1/locks/k/renew", session: a,
		body: map[string]any{"token": g.Token}}), 404, codeNotHeld)
	r = l.send(req{method: "POST", path: "/v1/admin/locks/none/release", header: admin})
	expect(t, "force release of a free key", r, 200, "")
	r.decode(t, &fr)
	if fr.Released != 0 {
		t.Fatalf("a free key's force release released %d", fr.Released)
	}
}

// TestClusterSignalStream: GET /v1/signals on a cluster member listens
// through the log; on the leader a signal sent by another session, or
// POSTed to /v1/signals/{channel}, reaches the stream, and a follower
// refuses the stream and the POST naming the leader.
func TestClusterSignalStream(t *testing.T) {
	ms := startCluster(t, 3, Config{})
	l := leaderOf(t, ms)
	lines, stop := sseLines(t, l.testServer, "/v1/signals?pattern=jobs.*")
	defer stop()
	sink := endpointSink{make(chan engine.Result, 1)}
	sender := l.hub.OpenEndpoint(sink)
	defer l.hub.CloseEndpoint(sender)
	res, done := l.hub.Call(&engine.Command{Kind: engine.KindRequest, Session: sender,
		Req: vocab.Request{Op: vocab.OpSignal, Key: []byte("jobs.build"), Value: []byte("hello")}})
	if !done {
		select {
		case res = <-sink.got:
		case <-time.After(25 * time.Second):
			t.Fatal("the signal was not answered through the log within 25 s")
		}
	}
	if res.Status != vocab.StatusOK || res.Int != 1 {
		t.Fatalf("signal answered %v with %d receivers, want ok and 1", res.Status, res.Int)
	}
	if s := nextSignal(t, lines); s.Channel != "jobs.build" || s.Payload != "hello" {
		t.Fatalf("the stream got %+v", s)
	}
	// POST /v1/signals/{channel} on the leader goes through the log too,
	// and its delivered counts the stream.
	if n := l.postSignal("jobs.deploy", "posted", nil); n != 1 {
		t.Fatalf("the leader's POST delivered %d, want 1", n)
	}
	if s := nextSignal(t, lines); s.Channel != "jobs.deploy" || s.Payload != "posted" {
		t.Fatalf("the stream got %+v", s)
	}
	for _, f := range ms {
		if f != l {
			eventually(t, "the follower to know its leader", func() bool { return f.node.LeaderAddr() != "" })
			expectNotLeader(t, "a follower's signal stream", f.send(req{method: "GET", path: "/v1/signals?pattern=jobs.*"}), l)
			expectNotLeader(t, "a follower's signal POST", f.send(req{method: "POST", path: "/v1/signals/jobs.x",
				body: map[string]string{"payload": "refused"}}), l)
		}
	}
	// What the followers refused was not sent: the stream's next signal
	// is the leader's next one.
	if n := l.postSignal("jobs.last", "after", nil); n != 1 {
		t.Fatalf("the leader's last POST delivered %d, want 1", n)
	}
	if s := nextSignal(t, lines); s.Channel != "jobs.last" {
		t.Fatalf("the stream got %+v after the followers' refusals, want jobs.last", s)
	}
}
