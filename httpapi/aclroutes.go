package httpapi

import (
	"net/http"

	"github.com/dflockd-ng/dflockd/policy"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/vocab"
)

// The policy's routes: the refusal log (Redis's ACL LOG), who the caller
// is, and why a request would be allowed or refused (dflockctl acl log,
// acl whoami, acl check). Without a policy they answer 404.

type (
	aclLogReply struct {
		PolicyVersion string            `json:"policy_version"`
		Refusals      []session.Refusal `json:"refusals"`
	}
	whoamiReply struct {
		Identity      string `json:"identity"`
		PolicyVersion string `json:"policy_version"`
		Everything    bool   `json:"everything"`
	}
	aclCheckReply struct {
		Identity string `json:"identity"`
		Command  string `json:"command"`
		Key      string `json:"key"`
		Class    string `json:"class,omitempty"`
		Allowed  bool   `json:"allowed"`
		Reason   string `json:"reason"`
	}
)

// noPolicy answers the policy routes of a server without one.
func (a *API) noPolicy(w http.ResponseWriter) bool {
	if a.hub.Policy() != nil {
		return false
	}
	writeError(w, http.StatusNotFound, codeNotFound, "no policy is configured (--policy-file)")
	return true
}

// aclLog is GET /v1/acl/log: the last refusals, oldest first.
func (a *API) aclLog(w http.ResponseWriter, _ *http.Request) {
	if a.noPolicy(w) {
		return
	}
	refusals := a.hub.Refusals()
	if refusals == nil {
		refusals = []session.Refusal{}
	}
	writeJSON(w, http.StatusOK, aclLogReply{PolicyVersion: a.hub.Policy().Version, Refusals: refusals})
}

// aclWhoami is GET /v1/acl/whoami: the identity the caller's token names.
func (a *API) aclWhoami(w http.ResponseWriter, r *http.Request) {
	if a.noPolicy(w) {
		return
	}
	id := callerIdentity(r)
	writeJSON(w, http.StatusOK, whoamiReply{Identity: id.Name, PolicyVersion: a.hub.Policy().Version, Everything: id.Everything()})
}

// aclCheck is GET /v1/acl/check?identity=&command=&key=: whether the
// policy in force allows the identity the command on the key, and the
// rule that decides.
func (a *API) aclCheck(w http.ResponseWriter, r *http.Request) {
	if a.noPolicy(w) {
		return
	}
	q := r.URL.Query()
	name, cmd, key := q.Get("identity"), q.Get("command"), q.Get("key")
	var id *policy.Identity
	if name == session.AuthTokenIdentity && a.cfg.AuthToken != "" {
		id = everyone
	} else {
		id = a.hub.Policy().Identity(name)
	}
	if id == nil {
		writeError(w, http.StatusNotFound, codeNotFound, "the policy has no identity "+quoteDetail(name))
		return
	}
	op := vocab.Named([]byte(cmd))
	if op == vocab.OpUnknown {
		writeError(w, http.StatusBadRequest, codeBadRequest, "unknown command "+quoteDetail(cmd)+" (a line-protocol command: l, r, incr, kget, listen, ...)")
		return
	}
	rep := aclCheckReply{Identity: id.Name, Command: cmd, Key: key}
	chk, checked := policy.CheckOf(op)
	switch {
	case !checked:
		rep.Allowed, rep.Reason = true, "the command touches no one's keys: it is not checked"
	case chk.Keyless:
		rep.Class = chk.Class.String()
		rep.Allowed = id.AllowsSome(chk.Class)
		rep.Reason = "the command names no key: it needs " + rep.Class + " on some key, and shows only those"
	default:
		rep.Class = chk.Class.String()
		rep.Allowed, rep.Reason = id.Explain(chk.Class, []byte(key), chk.Pattern)
	}
	writeJSON(w, http.StatusOK, rep)
}

// quoteDetail quotes a client's text for an error detail, bounded.
func quoteDetail(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return `"` + s + `"`
}
