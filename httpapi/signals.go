package httpapi

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/vocab"
)

// GET /v1/signals?pattern=P&group=G: dflockd v1.15–v1.16's signal stream
// (spec §F.2). The stream is an engine session of its own (a hub
// endpoint, as an HTTP session is) that listens on P, in queue group G if
// given: what `listen P G` on a TCP connection would get arrives as
//
//	event: sig
//	data: {"channel":"…","payload":"…"}
//
// with a ": ping" comment every --http-sse-ping-interval. Closing the
// stream closes the session, which drops its subscription (spec §B.9).
//
// Memory is bounded as on the line protocol: a stream queues at most
// signalBuffer pushes (the 64-message push buffer of §B.9). A push to a
// full queue is not delivered and not counted in the signal's receivers,
// and the stream is cut off at once (its write, blocked on a client that
// does not read, is interrupted), as a slow TCP consumer's connection is.

// signalBuffer is a stream's push queue (spec §B.9's 64 messages).
const signalBuffer = 64

// signalEndpoint is a stream's engine session: it takes pushes.
type signalEndpoint struct {
	ch      chan engine.Push
	cut     chan struct{} // closed when a push found ch full
	cutOnce sync.Once
	// answer takes the listen's answer when it comes late (a cluster
	// member answers through Post).
	answer chan engine.Result
}

var _ session.PushEndpoint = (*signalEndpoint)(nil)

func (e *signalEndpoint) Post(r engine.Result) {
	select {
	case e.answer <- r:
	default: // nothing owed: a demotion notice
	}
}

func (e *signalEndpoint) Room() bool { return len(e.ch) < cap(e.ch) }

func (e *signalEndpoint) Push(p engine.Push) bool {
	select {
	case e.ch <- p:
		return true
	default:
		e.cutOnce.Do(func() { close(e.cut) })
		return false
	}
}

// signalJSON is one pushed signal.
type signalJSON struct {
	Channel string `json:"channel"`
	Payload string `json:"payload"`
}

// streamSignals is GET /v1/signals.
func (a *API) streamSignals(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	pattern, group := q.Get("pattern"), q.Get("group")
	if pattern == "" {
		writeError(w, http.StatusBadRequest, codeBadRequest, "pattern is required")
		return
	}
	req, err := parse.Parse(parse.Frame{Cmd: []byte("listen"), Key: []byte(pattern), Arg: []byte(group)})
	if err != nil {
		writeError(w, http.StatusBadRequest, codeBadRequest, "pattern or group: "+err.Error())
		return
	}
	ip := clientIP(r)
	if ok, perIP := a.signalSlots.take(ip); !ok {
		a.refuseStream(w, "signal", perIP)
		return
	}
	defer a.signalSlots.give(ip)

	ep := &signalEndpoint{ch: make(chan engine.Push, signalBuffer), cut: make(chan struct{}), answer: make(chan engine.Result, 1)}
	id := a.hub.OpenEndpoint(ep)
	defer a.hub.CloseEndpoint(id) // drops the subscription
	res, done := a.hub.Call(&engine.Command{Kind: engine.KindRequest, Session: id, Req: req})
	if !done {
		select {
		case res = <-ep.answer:
		case <-r.Context().Done():
			return
		case <-a.stop:
			writeError(w, http.StatusServiceUnavailable, codeUnavailable, "shutting down")
			return
		}
	}
	switch res.Status {
	case vocab.StatusOK:
	case vocab.StatusErrorNotLeader:
		a.writeNotLeader(w)
		return
	default:
		// An invalid pattern, or --max-subscriptions (spec §B.9).
		writeError(w, http.StatusBadRequest, codeBadRequest, "listen refused: "+res.Status.String())
		return
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	out := a.newSSEWriter(w, r)
	// A cut interrupts the write a reader that does not read blocks, and
	// closes the session at once, so that no more pushes are queued for it.
	stopWatch := make(chan struct{})
	defer close(stopWatch)
	go func() {
		select {
		case <-ep.cut:
			_ = out.rc.SetWriteDeadline(time.Now())
			a.hub.CloseEndpoint(id)
		case <-stopWatch:
		}
	}()
	out.line("retry: 2000\n\n")
	ping := a.sseTicker()
	defer ping.Stop()
	for out.flush() {
		select {
		case p := <-ep.ch:
			out.signal(p)
			for more := true; more; { // what else is queued, in one flush
				select {
				case p := <-ep.ch:
					out.signal(p)
				default:
					more = false
				}
			}
		case <-ping.C:
			if !out.ping() {
				return // the reader took nothing since the last ping
			}
		case <-ep.cut:
			return
		case <-r.Context().Done():
			return
		case <-a.stop:
			return
		}
	}
}

// signal appends one signal event.
func (o *sseWriter) signal(p engine.Push) {
	b, err := json.Marshal(signalJSON{Channel: p.A, Payload: p.B})
	if err != nil {
		panic("httpapi: a signal that does not marshal: " + err.Error())
	}
	o.buf = append(o.buf, "event: sig\ndata: "...)
	o.buf = append(o.buf, b...)
	o.buf = append(o.buf, "\n\n"...)
}
