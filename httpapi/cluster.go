package httpapi

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/dflockd-ng/dflockd/cluster"
	"github.com/dflockd-ng/dflockd/vocab"
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
//     theirs do: the hub's Call proposes the request, and its one result,
//     immediate or late, comes back through the session's Post when the
//     entry applies (owed.go). A client that goes away from a call that
//     waits makes the call propose a withdrawal (a KindCancel), as on a
//     single node. A leader that is deposed answers the calls still
//     waiting 503 not_leader: their outcome may or may not have been
//     committed, as over TCP.
//   - A session lives on the leader that opened it (its id is never in
//     the log): after a failover the new leader answers it 410, saying
//     why (unknownSession). A session created with a stable_ref presents
//     it as a TCP client's stable-ref (presentStableRef), so that with
//     --orphan-ttl a session with the same ref on the new leader takes
//     its claims over.
//   - GET /v1/readindex answers 200 once the member is sure it leads
//     and its replica holds everything committed before the request
//     (Cluster.ReadIndex).
//   - The admin routes change the membership and stream backups
//     (snapshot.go), with the admin token in X-Dflockd-Admin
//     (Config.AdminToken; without one they answer 503 admin_disabled).

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
	writeJSON(w, http.StatusOK, statusReply{Status: vocab.StatusOK.String()})
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
	if !a.adminAuthorized(w, r) { // observatory.go
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
	writeJSON(w, http.StatusOK, voterReply{Status: vocab.StatusOK.String(), NodeID: b.NodeID})
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
	writeJSON(w, http.StatusOK, voterReply{Status: vocab.StatusOK.String(), NodeID: id})
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
