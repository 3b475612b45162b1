package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/dflockd-ng/dflockd/cluster"
	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/parse"
)

// The HTTP API on a cluster member (spec §F.2, §G): its hub is a cluster
// hub (session.NewClusterHub), whose engine is the replica of the raft
// log.
//
//   - Sessions and lock calls are the leader's: on any other member they
//     answer 503 not_leader, with the leader's client address in
//     X-Dflockd-Leader when it is known (leaderOnly). The reads (stats,
//     metrics, health, ready) are any member's.
//   - On the leader, a session is a connection of the hub's, numbered as
//     its TCP clients are, and its lock calls go through the log as
//     theirs do: Hub.Submit proposes the request, and its one result,
//     immediate or late, comes back through the session's Post when the
//     entry applies (replies). A client that goes away from a call that
//     waits makes the call propose a withdrawal (Hub.Withdraw, an
//     OpCancel), as on a single node. A leader that is deposed answers
//     the calls still waiting 503 not_leader: their outcome may or may
//     not have been committed, as over TCP.
//   - GET /v1/readindex answers 200 once the member is sure it leads
//     and its replica holds everything committed before the request
//     (Cluster.ReadIndex).
//   - The admin routes change the membership, with the admin token in
//     X-Dflockd-Admin (Config.AdminToken; without one they answer 503
//     admin_disabled).

// Cluster is a cluster member's raft side (cluster.Node): errors that
// wrap cluster.ErrNotLeader answer 503 not_leader; cluster.ErrBadMember
// 400 and cluster.ErrUnknownMember 404.
type Cluster interface {
	ReadIndex() error
	AddVoter(id, raftAddr, clientAddr string) error
	RemoveVoter(id string) error
}

// The headers of the cluster routes.
const (
	// leaderHeader names the leader's client (TCP) address on a 503
	// not_leader: the member list clients are configured with is of
	// those addresses.
	leaderHeader = "X-Dflockd-Leader"
	adminHeader  = "X-Dflockd-Admin"
)

// writeNotLeader answers 503 not_leader, naming the leader if known.
func (a *API) writeNotLeader(w http.ResponseWriter) {
	detail := "this member does not lead the cluster"
	if addr := a.hub.LeaderAddr(); addr != "" {
		w.Header().Set(leaderHeader, addr)
		detail += "; the leader's client address is " + addr
	}
	writeError(w, http.StatusServiceUnavailable, codeNotLeader, detail)
}

// leaderOnly serves h on the leader and answers 503 not_leader elsewhere
// (always h on a single node).
func (a *API) leaderOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !a.hub.Leading() {
			a.writeNotLeader(w)
			return
		}
		h(w, r)
	}
}

// replies are the results a cluster member's HTTP session is owed: one
// for each request or withdrawal it submitted, in log order. A
// demotion's error_not_leader voids all that is owed (nothing submitted
// before it will be answered); a result nobody is owed (a demotion
// notice with nothing in flight) is dropped. The session's turn makes
// one call at a time use them.
type replies struct {
	mu   sync.Mutex
	owed int
	got  []engine.Result
	wake chan struct{} // one slot: something arrived
}

func newReplies() *replies { return &replies{wake: make(chan struct{}, 1)} }

// post is the session's Post on a cluster hub, from any goroutine.
func (q *replies) post(r engine.Result) {
	q.mu.Lock()
	if q.owed == 0 {
		q.mu.Unlock()
		return
	}
	if r.Status == parse.StatusErrorNotLeader {
		q.owed = 0 // the engine never answers that: a demotion
	} else {
		q.owed--
	}
	q.got = append(q.got, r)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// expect counts a result to come, before its submission (which may be
// answered at once).
func (q *replies) expect() {
	q.mu.Lock()
	q.owed++
	q.mu.Unlock()
}

// unexpect takes back the expect of a submission that failed. If a
// demotion voided it meanwhile, the demotion's notice answered nothing
// and is dropped.
func (q *replies) unexpect() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.owed > 0 {
		q.owed--
		return
	}
	if n := len(q.got); n > 0 && q.got[n-1].Status == parse.StatusErrorNotLeader {
		q.got = q.got[:n-1]
	}
}

// forgive cancels what is still owed: a withdrawal took the request
// that owed it away.
func (q *replies) forgive() {
	q.mu.Lock()
	q.owed = 0
	q.mu.Unlock()
}

// next waits for the next result; it gives up when ctx ends or gone is
// closed first (nil: never).
func (q *replies) next(ctx context.Context, gone <-chan struct{}) (engine.Result, ending) {
	for {
		q.mu.Lock()
		if len(q.got) > 0 {
			r := q.got[0]
			q.got = append(q.got[:0], q.got[1:]...)
			q.mu.Unlock()
			return r, answered
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-ctx.Done():
			return engine.Result{}, clientGone
		case <-gone:
			return engine.Result{}, sessionGone
		}
	}
}

// wait is next for a result that must be taken whoever is waiting: it is
// bounded by the log, which answers every submission, or by a demotion,
// which voids them (a leader that cannot commit steps down).
func (q *replies) wait() engine.Result {
	r, _ := q.next(context.Background(), nil)
	return r
}

var notLeader = engine.Result{Status: parse.StatusErrorNotLeader}

// submit proposes req for s; false if this member does not lead.
func (a *API) submit(s *httpSession, req *parse.Request) bool {
	s.replies.expect()
	if a.hub.Submit(s.conn, req) != nil {
		s.replies.unexpect()
		return false
	}
	return true
}

// do submits req for s and waits for its result, whoever is waiting.
func (a *API) do(s *httpSession, req *parse.Request) engine.Result {
	if !a.submit(s, req) {
		return notLeader
	}
	return s.replies.wait()
}

// callReplica is call's cluster path, in s's turn: req goes through the
// log, and its result comes back through s.replies.
func (a *API) callReplica(ctx context.Context, s *httpSession, req *parse.Request) (engine.Result, ending) {
	if !a.submit(s, req) {
		return notLeader, answered
	}
	res, end := s.replies.next(ctx, s.gone)
	switch {
	case end != answered:
		return a.withdrawReplica(s, req, end)
	case res.Status == parse.StatusErrorNotLeader:
		return res, answered
	case s.closing():
		a.abandon(req, &res, a.logged(s))
		return res, sessionGone
	case ctx.Err() != nil:
		a.abandon(req, &res, a.logged(s))
		return res, clientGone
	}
	return res, answered
}

// withdrawReplica ends s's request for a caller that stopped waiting: it
// proposes the withdrawal, and takes what the log answers. The request's
// result, if it came first, is given back (abandon); the
// withdrawal's reply follows it.
func (a *API) withdrawReplica(s *httpSession, req *parse.Request, end ending) (engine.Result, ending) {
	q := s.replies
	s.replies.expect()
	if a.hub.Withdraw(s.conn) != nil {
		q.unexpect()
		// Not leading any more: the request's result, or the
		// demotion's notice, is on its way.
		res := q.wait()
		a.abandon(req, &res, a.logged(s))
		return res, end
	}
	res := q.wait()
	switch {
	case res.Status == parse.StatusErrorNotLeader:
	case res.Kind == engine.KindInt:
		// The withdrawal's reply came first: the request was withdrawn
		// and will never be answered. (Int 0 cannot come first: the
		// log answers the request before the withdrawal that follows
		// it; if it did, nothing more is owed either.)
		q.forgive()
	default:
		// The request was answered before the withdrawal applied.
		q.wait()
		a.abandon(req, &res, a.logged(s))
	}
	return res, end
}

// logged returns the apply of abandon for a cluster leader's session s:
// through the log.
func (a *API) logged(s *httpSession) func(*parse.Request) engine.Result {
	return func(r *parse.Request) engine.Result { return a.do(s, r) }
}

// readIndex is GET /v1/readindex.
func (a *API) readIndex(w http.ResponseWriter, _ *http.Request) {
	if a.cfg.Cluster == nil {
		writeError(w, http.StatusNotFound, codeNotFound, "not a cluster member")
		return
	}
	if !a.hub.Leading() {
		a.writeNotLeader(w)
		return
	}
	if err := a.cfg.Cluster.ReadIndex(); err != nil {
		a.clusterError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, statusReply{Status: "ok"})
}

// clusterError answers a failed raft call.
func (a *API) clusterError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, cluster.ErrNotLeader):
		a.writeNotLeader(w)
	case errors.Is(err, cluster.ErrBadMember):
		writeError(w, http.StatusBadRequest, codeBadRequest, err.Error())
	case errors.Is(err, cluster.ErrUnknownMember):
		writeError(w, http.StatusNotFound, codeNotFound, err.Error())
	default:
		a.cfg.Logf("httpapi: cluster: %v", err)
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, err.Error())
	}
}

// Bodies of the admin routes.
type (
	voterBody struct {
		NodeID     string `json:"node_id"`
		RaftAddr   string `json:"raft_addr"`
		ClientAddr string `json:"client_addr"`
	}
	voterReply struct {
		Status string `json:"status"`
		NodeID string `json:"node_id"`
	}
)

// admin checks an admin call's token: 503 admin_disabled without one
// configured, 401 (after the same delay as a wrong bearer token) for a
// missing or wrong one, and then that this is a cluster's leader. It
// answers and returns false when the call stops here.
func (a *API) admin(w http.ResponseWriter, r *http.Request) bool {
	if a.cfg.AdminToken == "" {
		writeError(w, http.StatusServiceUnavailable, codeAdminDisabled, "the admin routes need --admin-token (DFLOCKD_ADMIN_TOKEN)")
		return false
	}
	if !sameToken(r.Header.Get(adminHeader), &a.adminSum) {
		a.refuse(w, r, "")
		return false
	}
	if a.cfg.Cluster == nil {
		writeError(w, http.StatusNotFound, codeNotFound, "not a cluster member")
		return false
	}
	if !a.hub.Leading() {
		a.writeNotLeader(w)
		return false
	}
	return true
}

// addVoter is POST /v1/admin/voters.
func (a *API) addVoter(w http.ResponseWriter, r *http.Request) {
	if !a.admin(w, r) {
		return
	}
	var b voterBody
	msg := readJSON(w, r, &b, false)
	if msg == "" {
		msg = firstOf(checkNodeID(b.NodeID), checkHostPort("raft_addr", b.RaftAddr), checkHostPort("client_addr", b.ClientAddr))
	}
	if msg != "" {
		writeError(w, http.StatusBadRequest, codeBadRequest, msg)
		return
	}
	if err := a.cfg.Cluster.AddVoter(b.NodeID, b.RaftAddr, b.ClientAddr); err != nil {
		a.clusterError(w, err)
		return
	}
	a.cfg.Logf("httpapi: admin: added voter %s (raft %s, client %s) for %s", b.NodeID, b.RaftAddr, b.ClientAddr, r.RemoteAddr)
	writeJSON(w, http.StatusOK, voterReply{Status: "ok", NodeID: b.NodeID})
}

// removeVoter is DELETE /v1/admin/voters/{id}.
func (a *API) removeVoter(w http.ResponseWriter, r *http.Request) {
	if !a.admin(w, r) {
		return
	}
	id := r.PathValue("id")
	if msg := checkNodeID(id); msg != "" {
		writeError(w, http.StatusBadRequest, codeBadRequest, msg)
		return
	}
	if err := a.cfg.Cluster.RemoveVoter(id); err != nil {
		a.clusterError(w, err)
		return
	}
	a.cfg.Logf("httpapi: admin: removed voter %s for %s", id, r.RemoteAddr)
	writeJSON(w, http.StatusOK, voterReply{Status: "ok", NodeID: id})
}

// checkNodeID: an id as --node-id and --cluster-peers write it.
func checkNodeID(id string) string {
	switch {
	case id == "":
		return "node_id is required"
	case len(id) > maxField:
		return "node_id is over " + strconv.Itoa(maxField) + " bytes"
	case hasBlank(id) || strings.ContainsAny(id, "=,@/"):
		return "node_id may not contain white space or any of = , @ /"
	}
	return ""
}

// checkHostPort: host:port with a numeric port.
func checkHostPort(name, v string) string {
	host, port, err := net.SplitHostPort(v)
	if err != nil || host == "" || len(v) > maxField || hasBlank(v) {
		return name + " must be host:port"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return name + " must have a port in 1..65535"
	}
	return ""
}
