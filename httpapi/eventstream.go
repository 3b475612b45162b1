package httpapi

import (
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
)

// GET /v1/events: the lock events of the engine's rings (engine/events.go)
// as server-sent events. One merger goroutine, running only while someone
// streams, polls the shards' ring heads (atomics, no lock) and merges what
// is new, in time order, into a ring of its own whose ids the stream
// carries; a reader that reconnects with Last-Event-ID gets what it
// missed from that ring, or an event "reset" when it no longer has it. A
// new reader (no Last-Event-ID) gets the ring's last streamHistory events
// of its prefix first: the same recent past whenever it comes, since a
// merger that starts merges, before it registers the reader, everything
// the engine recorded while nobody read (at most streamRing per shard).
//
// Memory is bounded: the merged ring has streamRing events; each reader a
// queue of subscriberBuffer events, and a reader whose queue is full (it
// does not read fast enough) is cut off, so a slow reader never holds the
// merger back or grows the server. It reconnects and resumes from its
// Last-Event-ID. A write that makes no progress for streamWriteTimeout
// ends the stream too.

// Bounds of the event stream.
const (
	// streamPoll is the merger's period: the stream's latency, and a
	// cost (one atomic load per shard) only while someone streams.
	streamPoll = 100 * time.Millisecond
	// streamRing is how many merged events a reconnect can catch up on.
	streamRing = 4096
	// streamHistory is how many of the ring's last events a new reader
	// gets first: the page's timeline keeps 500.
	streamHistory = 500
	// subscriberBuffer is how far a reader may fall behind before it is
	// cut off: a few polls' worth of a busy server.
	subscriberBuffer = 1024
	// maxStreams bounds the open streams of each route (each a goroutine
	// and a queue); streamSlots also caps each address's share.
	maxStreams = 64
	// defaultSSEPing is the period of the comment line that keeps proxies
	// from closing a quiet stream (dflockd's --http-sse-ping-interval).
	defaultSSEPing = 15 * time.Second
	// streamWriteTimeout ends a stream whose client does not read.
	streamWriteTimeout = 10 * time.Second
	// mergeBatch bounds the events taken from one shard per poll.
	mergeBatch = 1024
)

type eventStream struct {
	api *API
	// epoch tells this process's ids from another's: a client that
	// reconnects to a restarted server gets a reset, not a wrong resume.
	epoch string
	mu    sync.Mutex
	// Guarded by mu.
	subs    map[*subscriber]struct{}
	running bool
	ring    []streamEvent // circular, streamRing long once anyone streamed
	next    uint64        // id of the next merged event, from 1
	gapAt   uint64        // events merged before this id may have gaps
	// Owned by the merger goroutine (one at a time: running), and by
	// subscribe while none runs.
	eng     *engine.Engine
	cursors []uint64
	batch   []mergedEvent
}

type streamEvent struct {
	id uint64
	ev engine.Event
}

type mergedEvent struct {
	ev    engine.Event
	shard int
}

type subscriber struct {
	prefix string
	ch     chan streamEvent
	cut    chan struct{} // closed when the reader fell subscriberBuffer behind
}

func newEventStream(a *API) *eventStream {
	return &eventStream{api: a, epoch: strconv.FormatInt(time.Now().UnixNano(), 36), subs: make(map[*subscriber]struct{}), next: 1}
}

func (s *eventStream) formatID(id uint64) string { return s.epoch + "." + strconv.FormatUint(id, 10) }

// parseID returns the merged id of a Last-Event-ID of this process.
func (s *eventStream) parseID(v string) (uint64, bool) {
	epoch, n, ok := strings.Cut(v, ".")
	if !ok || epoch != s.epoch {
		return 0, false
	}
	id, err := strconv.ParseUint(n, 10, 64)
	return id, err == nil
}

// subscribe registers a reader of events whose key starts with prefix.
// With a Last-Event-ID (last not ""), backlog is what it missed; reset
// says that some of it is gone (or the id is not this server's). Without
// one, backlog is the last streamHistory events of the prefix. The
// backlog and the registration are taken together, so the reader gets
// every event once. ok is false when maxStreams readers are open.
//
// Lock order: s.mu, then (catching up) a shard's lock of the engine,
// which never calls back into the stream.
func (s *eventStream) subscribe(prefix, last string) (sub *subscriber, backlog []streamEvent, reset, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.subs) >= maxStreams {
		return nil, nil, false, false
	}
	if s.ring == nil {
		s.ring = make([]streamEvent, streamRing)
	}
	if !s.running {
		// No merger runs, so its state is ours: take what the engine
		// recorded since the last one stopped, so that the ring (and so a
		// new reader's history) does not depend on when that was.
		s.catchUpLocked()
	}
	if last != "" {
		backlog, reset = s.sinceLocked(prefix, last)
	} else {
		backlog = s.historyLocked(prefix)
	}
	sub = &subscriber{prefix: prefix, ch: make(chan streamEvent, subscriberBuffer), cut: make(chan struct{})}
	s.subs[sub] = struct{}{}
	if !s.running {
		s.running = true
		go s.merge()
	}
	return sub, backlog, reset, true
}

// catchUpLocked merges, while no merger runs, what the engine's rings
// recorded since the merger last took from them: for the first reader
// (or a new engine), everything they still hold. Only each shard's last
// streamRing events are read, as older ones could not stay in the merged
// ring; skipping some is a gap for a reader that resumes from before.
func (s *eventStream) catchUpLocked() {
	eng := s.api.hub.Engine()
	if eng == nil {
		return
	}
	if eng != s.eng {
		if s.eng != nil {
			s.gapAt = s.next
		}
		s.eng, s.cursors = eng, make([]uint64, eng.Shards())
	}
	for i := range s.cursors {
		if head := eng.EventHead(i); head > s.cursors[i]+streamRing {
			s.cursors[i] = head - streamRing
			s.gapAt = s.next
		}
	}
	// Bounded: a busy engine records while this reads, and what comes
	// after the last round is the merger's.
	for range streamRing/mergeBatch + 1 {
		if s.collect() {
			s.gapAt = s.next
		}
		if len(s.batch) == 0 {
			return
		}
		for _, m := range s.batch {
			s.appendLocked(m.ev)
		}
		clear(s.batch)
		s.batch = s.batch[:0]
	}
}

// appendLocked gives ev the next id and puts it into the ring.
func (s *eventStream) appendLocked(ev engine.Event) streamEvent {
	e := streamEvent{id: s.next, ev: ev}
	s.ring[s.next%streamRing] = e
	s.next++
	return e
}

// oldestLocked is the id of the oldest event the ring still holds.
func (s *eventStream) oldestLocked() uint64 {
	if s.next > streamRing {
		return s.next - streamRing
	}
	return 1
}

// historyLocked returns the ring's last streamHistory events of prefix,
// oldest first.
func (s *eventStream) historyLocked(prefix string) []streamEvent {
	var out []streamEvent
	for i := s.next; i > s.oldestLocked() && len(out) < streamHistory; i-- {
		if e := s.ring[(i-1)%streamRing]; strings.HasPrefix(e.ev.Key, prefix) {
			out = append(out, e)
		}
	}
	slices.Reverse(out)
	return out
}

// sinceLocked returns the retained events after the reader's last id.
func (s *eventStream) sinceLocked(prefix, last string) ([]streamEvent, bool) {
	id, ok := s.parseID(last)
	if !ok || id >= s.next {
		return nil, true
	}
	oldest := s.oldestLocked()
	// Events may be missing just before gapAt: a reader that had not
	// seen gapAt itself missed them.
	reset := id+1 < oldest || id < s.gapAt
	from := max(id+1, oldest, s.gapAt)
	var out []streamEvent
	for i := from; i < s.next; i++ {
		if e := s.ring[i%streamRing]; strings.HasPrefix(e.ev.Key, prefix) {
			out = append(out, e)
		}
	}
	return out, reset
}

func (s *eventStream) unsubscribe(sub *subscriber) {
	s.mu.Lock()
	delete(s.subs, sub)
	s.mu.Unlock()
}

// merge is the merger goroutine: it polls until nobody streams or the API
// shuts down.
func (s *eventStream) merge() {
	t := time.NewTicker(streamPoll)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.api.stop:
			s.mu.Lock()
			s.running = false
			s.mu.Unlock()
			return
		}
		if !s.poll() {
			return
		}
	}
}

// poll merges what the shards recorded since the last poll and hands it
// to the readers; false when nobody reads any more (the merger stops,
// keeping its cursors, so the next reader catches up on what is still in
// the engine's rings).
func (s *eventStream) poll() bool {
	gap := s.collect()
	s.mu.Lock()
	defer s.mu.Unlock()
	if gap {
		s.gapAt = s.next
	}
	for _, m := range s.batch {
		e := s.appendLocked(m.ev)
		for sub := range s.subs {
			if !strings.HasPrefix(e.ev.Key, sub.prefix) {
				continue
			}
			select {
			case sub.ch <- e:
			default:
				close(sub.cut) // too slow: its handler ends the stream
				delete(s.subs, sub)
			}
		}
	}
	clear(s.batch)
	s.batch = s.batch[:0]
	if len(s.subs) == 0 {
		s.running = false
		return false
	}
	return true
}

// collect gathers the shards' new events into s.batch in time order, and
// reports whether some were lost (a ring overran a cursor, or the engine
// changed: a cluster member's replica restored from a snapshot).
func (s *eventStream) collect() (gap bool) {
	eng := s.api.hub.Engine()
	if eng == nil {
		return false
	}
	if eng != s.eng {
		// A new engine (a replica restored from a snapshot): start at
		// its present.
		gap = s.eng != nil
		s.follow(eng)
		return gap
	}
	var evs []engine.Event
	for i := range s.cursors {
		if eng.EventHead(i) == s.cursors[i] {
			continue
		}
		var lost uint64
		evs, lost = eng.EventsSince(i, s.cursors[i], mergeBatch, evs[:0])
		gap = gap || lost > 0
		for _, ev := range evs {
			s.batch = append(s.batch, mergedEvent{ev, i})
		}
		if n := len(evs); n > 0 {
			s.cursors[i] = evs[n-1].Seq
		}
	}
	// Each shard's events are in order; across shards, time orders them
	// (ties by shard, so that the merge is the same every time).
	slices.SortStableFunc(s.batch, func(a, b mergedEvent) int {
		if a.ev.At != b.ev.At {
			return int(a.ev.At - b.ev.At)
		}
		return a.shard - b.shard
	})
	return gap
}

// follow makes eng the engine merged from, from its present on.
func (s *eventStream) follow(eng *engine.Engine) {
	s.eng = eng
	s.cursors = make([]uint64, eng.Shards())
	for i := range s.cursors {
		s.cursors[i] = eng.EventHead(i)
	}
}

// streamEvents is GET /v1/events.
func (a *API) streamEvents(w http.ResponseWriter, r *http.Request) {
	prefix := r.URL.Query().Get("prefix")
	if len(prefix) > maxField {
		writeError(w, http.StatusBadRequest, codeBadRequest, "prefix is over "+strconv.Itoa(maxField)+" bytes")
		return
	}
	if eng := a.hub.Engine(); eng != nil && !eng.EventsOn() {
		writeError(w, http.StatusNotFound, codeNotFound, "the server records no lock events (--observatory-events is 0)")
		return
	}
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("last_event_id") // for clients that cannot set headers
	}
	ip := clientIP(r)
	if ok, perIP := a.eventSlots.take(ip); !ok {
		a.refuseStream(w, "event", perIP)
		return
	}
	defer a.eventSlots.give(ip)
	sub, backlog, reset, ok := a.events.subscribe(prefix, last)
	if !ok {
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, "too many event streams are open")
		return
	}
	defer a.events.unsubscribe(sub)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	out := a.newSSEWriter(w, r)
	out.scope = observeScope(r) // with a policy: only the events of keys the caller may observe
	out.line("retry: 2000\n\n")
	if reset {
		out.line("event: reset\ndata: {}\n\n")
	}
	for _, e := range backlog {
		out.event(e)
	}
	ping := a.sseTicker()
	defer ping.Stop()
	for out.flush() {
		select {
		case e := <-sub.ch:
			out.event(e)
			for more := true; more; { // what else is queued, in one flush
				select {
				case e := <-sub.ch:
					out.event(e)
				default:
					more = false
				}
			}
		case <-ping.C:
			if !out.ping() {
				return // the reader took nothing since the last ping
			}
		case <-sub.cut:
			return // the client reconnects with its Last-Event-ID
		case <-r.Context().Done():
			return
		case <-a.stop:
			return
		}
	}
}

// sseTicker ticks at the SSE keep-alive period; never with NoSSEPing.
func (a *API) sseTicker() *time.Ticker {
	t := time.NewTicker(a.cfg.SSEPingInterval)
	if a.cfg.NoSSEPing {
		t.Stop()
	}
	return t
}

// sseWriter writes a stream's frames; the first failed write ends it.
type sseWriter struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	a     *API
	probe *peerProbe // nil: none
	scope *scope     // the caller's view (nil: every key)
	buf   []byte
	err   error
	// pinged: the buffer holds a ping, after which the probe marks.
	pinged bool
}

// newSSEWriter writes r's stream to w, probing its peer at each ping.
func (a *API) newSSEWriter(w http.ResponseWriter, r *http.Request) *sseWriter {
	o := &sseWriter{w: w, rc: http.NewResponseController(w), a: a}
	if c, ok := r.Context().Value(connKey{}).(net.Conn); ok {
		if sock := socketOf(c); sock != nil {
			o.probe = newPeerProbe(sock)
		}
	}
	return o
}

func (o *sseWriter) line(s string) { o.buf = append(o.buf, s...) }

// ping queues the keep-alive comment; false, to end the stream, when the
// reader took nothing since the last one (peerProbe). Its connection is
// then closed at once: net/http would keep it for a next request, idle,
// holding a descriptor for a peer that is gone. (HTTP/2 cannot hand a
// connection over; there the stream alone ends.)
func (o *sseWriter) ping() bool {
	if o.probe.stalled() {
		if c, _, err := o.rc.Hijack(); err == nil {
			c.Close()
		}
		return false
	}
	o.line(": ping\n\n")
	o.pinged = true
	return true
}

func (o *sseWriter) event(e streamEvent) {
	if !o.scope.sees(e.ev.Key) {
		return
	}
	v := o.a.view()
	ej := v.event(&e.ev)
	ej.ID = o.a.events.formatID(e.id)
	b, err := json.Marshal(ej)
	if err != nil {
		panic("httpapi: an event that does not marshal: " + err.Error())
	}
	o.buf = append(o.buf, "id: "...)
	o.buf = append(o.buf, ej.ID...)
	o.buf = append(o.buf, "\nevent: lock\ndata: "...)
	o.buf = append(o.buf, b...)
	o.buf = append(o.buf, "\n\n"...)
}

// flush sends what is buffered; false once the stream is broken.
func (o *sseWriter) flush() bool {
	if o.err != nil {
		return false
	}
	if len(o.buf) > 0 {
		_ = o.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout)) // unsupported: no deadline
		if _, o.err = o.w.Write(o.buf); o.err == nil {
			o.err = o.rc.Flush()
		}
		o.buf = o.buf[:0]
		if o.pinged && o.err == nil {
			o.probe.mark()
		}
		o.pinged = false
	}
	return o.err == nil
}
