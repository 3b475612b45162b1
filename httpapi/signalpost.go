package httpapi

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/vocab"
)

// POST /v1/signals/{channel} with {"payload":"…"}: dflockd v1.15–v1.16's
// way to send a signal over HTTP (spec §F.2), the line protocol's
// `signal <channel> <payload>`. It answers 200 {"delivered":n}, n counted
// as that command's "ok <n>" counts (session.Hub.Route): the listening TCP
// connections that are not backlogged, the GET /v1/signals streams whose
// queue has room, one per queue group.
//
// The signal is sent from an engine session of its own (oneShotCall), as
// GET /v1/signals listens from one: on a cluster member it goes through
// the log like every other mutating call, and the count comes back with
// its answer (Hub.Deliver). It is gated as GET /v1/signals is (leaderOnly,
// and the bearer token).

// signalBody is the body of POST /v1/signals/{channel}.
type signalBody struct {
	Payload string `json:"payload"`
}

// deliveredReply is its answer.
type deliveredReply struct {
	Delivered int64 `json:"delivered"`
}

// postSignal is POST /v1/signals/{channel}. Checks come in the lock
// routes' order: the channel, then the body; then a drain refuses it.
func (a *API) postSignal(w http.ResponseWriter, r *http.Request) {
	channel := r.PathValue("channel")
	if msg := checkKey(channel); msg != "" {
		writeError(w, http.StatusBadRequest, codeBadRequest, "channel: "+msg)
		return
	}
	var b signalBody
	if msg := firstOf(readJSON(w, r, &b, false), checkPayload(b.Payload)); msg != "" {
		writeError(w, http.StatusBadRequest, codeBadRequest, msg)
		return
	}
	// The line protocol's own grammar decides the rest: a channel is one
	// literal name, no wildcard (spec §B.9).
	req, err := parse.Parse(parse.Frame{Cmd: []byte("signal"), Key: []byte(channel), Arg: []byte(b.Payload)})
	if err != nil {
		writeError(w, http.StatusBadRequest, codeBadRequest, "channel or payload: "+err.Error())
		return
	}
	if a.draining() {
		writeError(w, http.StatusServiceUnavailable, codeDraining, "")
		return
	}
	res, ok := a.oneShotCall(r, &engine.Command{Kind: engine.KindRequest, Req: req})
	if !ok {
		return // the caller went away; the signal goes on
	}
	switch {
	case res.Status == vocab.StatusOK && res.Kind == engine.KindInt:
		writeJSON(w, http.StatusOK, deliveredReply{Delivered: res.Int})
	case res.Status == vocab.StatusErrorNotLeader:
		a.writeNotLeader(w) // a leader deposed before the log took it
	case res.Status == vocab.StatusErrorDraining:
		writeError(w, http.StatusServiceUnavailable, codeDraining, "")
	default:
		a.cfg.Logf("httpapi: signal answered %s (kind %d), which the HTTP API does not map", res.Status, res.Kind)
		writeError(w, http.StatusInternalServerError, codeInternal, "")
	}
}

// checkPayload: a payload is what the TCP protocol can carry on its
// argument line: not empty, at most its cap, no LF, and no trailing CR
// (which the line protocol strips).
func checkPayload(p string) string {
	switch {
	case p == "":
		return "payload required"
	case len(p) > parse.MaxLine:
		return "payload too long (max " + strconv.Itoa(parse.MaxLine) + " bytes)"
	case strings.IndexByte(p, '\n') >= 0:
		return "payload contains a newline"
	case strings.HasSuffix(p, "\r"):
		return "payload ends in a carriage return"
	}
	return ""
}
