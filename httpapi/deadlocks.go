package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dflockd-ng/dflockd/deadlock"
	"github.com/dflockd-ng/dflockd/engine"
)

// The deadlock monitor runs the search (package deadlock) on a bounded
// schedule: when someone asks (GET /v1/deadlocks, a /metrics scrape) and
// the last search is older than checkEvery; otherwise it answers the last
// result. A server nobody looks at never searches. Each search walks the
// shards once, as stats does, and again to confirm what it found (a walk
// is not a snapshot of one instant, see engine.WaitGraph). A deadlock is
// logged once, when first seen; it is known by its sessions and keys.

// checkEvery bounds the searches: at most one a second, whatever the
// number of clients and scrapers asking.
const checkEvery = time.Second

type deadlockMonitor struct {
	api *API
	mu  sync.Mutex
	// Guarded by mu.
	checked time.Time
	current []foundDeadlock
	// detected counts the deadlocks first seen (a counter for rates).
	detected prometheus.Counter
	gauge    *prometheus.Desc
}

// foundDeadlock is a confirmed deadlock and when it was first seen.
type foundDeadlock struct {
	deadlock.Deadlock
	sig   string
	since time.Time
}

func newDeadlockMonitor(a *API, reg prometheus.Registerer) *deadlockMonitor {
	m := &deadlockMonitor{
		api: a,
		detected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dflockd_deadlocks_detected_total",
			Help: "Deadlocks among lock waiters found since the start (each counted once, when first seen).",
		}),
		gauge: prometheus.NewDesc("dflockd_deadlocks",
			"Deadlocks among lock waiters now (searched at most once a second, when asked).", nil, nil),
	}
	if reg != nil {
		reg.MustRegister(m)
	}
	return m
}

// Describe and Collect make the monitor a collector: a scrape asks for
// the current deadlocks, which runs a search when the last is stale.
func (m *deadlockMonitor) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.gauge
	m.detected.Describe(ch)
}

func (m *deadlockMonitor) Collect(ch chan<- prometheus.Metric) {
	found, _ := m.check()
	ch <- prometheus.MustNewConstMetric(m.gauge, prometheus.GaugeValue, float64(len(found)))
	m.detected.Collect(ch)
}

// check returns the current deadlocks, searching if the last search is
// older than checkEvery, and when that search ran.
func (m *deadlockMonitor) check() ([]foundDeadlock, time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if !m.checked.IsZero() && now.Sub(m.checked) < checkEvery {
		return m.current, m.checked
	}
	m.checked = now
	eng := m.api.hub.Engine()
	if eng == nil {
		m.current = nil
		return nil, now
	}
	first := deadlock.Find(eng.WaitGraph())
	var confirmed []deadlock.Deadlock
	if len(first) > 0 {
		sigs := make(map[string]bool, len(first))
		for i := range first {
			sigs[signature(&first[i])] = true
		}
		for _, d := range deadlock.Find(eng.WaitGraph()) {
			if sigs[signature(&d)] {
				confirmed = append(confirmed, d)
			}
		}
	}
	prev := make(map[string]time.Time, len(m.current))
	for _, f := range m.current {
		prev[f.sig] = f.since
	}
	next := make([]foundDeadlock, 0, len(confirmed))
	for _, d := range confirmed {
		f := foundDeadlock{Deadlock: d, sig: signature(&d), since: now}
		if since, ok := prev[f.sig]; ok {
			f.since = since
		} else {
			m.detected.Inc()
			if l := m.api.cfg.Log; l != nil {
				l.Warn("deadlock: connections wait for each other", "connections", connList(eng, f.Sessions), "keys", f.keyList())
			} else {
				m.api.cfg.Logf("httpapi: deadlock: connections %s wait for each other on %s", connList(eng, f.Sessions), f.keyList())
			}
		}
		next = append(next, f)
	}
	m.current = next
	return next, now
}

// signature names a deadlock by its sessions and keys: the same cycle
// found again is the same deadlock.
func signature(d *deadlock.Deadlock) string {
	var b strings.Builder
	for _, s := range d.Sessions {
		b.WriteString(strconv.FormatUint(s, 10))
		b.WriteByte(',')
	}
	for _, k := range d.Keys {
		b.WriteString(k.Kind)
		b.WriteByte(':')
		b.WriteString(strconv.Quote(k.Key))
		b.WriteByte(',')
	}
	return b.String()
}

// connList names sessions as the page and dflockctl do, by their
// connection number ("#17"): the session ids of the wait-for graph are
// the engine's own.
func connList(eng *engine.Engine, sessions []uint64) string {
	names := make([]string, len(sessions))
	for i, s := range sessions {
		if conn, open := eng.SessionConn(engine.SessionID(s)); open {
			names[i] = "#" + strconv.FormatUint(conn, 10)
		} else {
			names[i] = "a closed connection"
		}
	}
	return strings.Join(names, ", ")
}

func (f *foundDeadlock) keyList() string {
	keys := make([]string, len(f.Keys))
	for i, k := range f.Keys {
		keys[i] = k.Kind + " " + strconv.Quote(k.Key)
	}
	return strings.Join(keys, ", ")
}

type (
	deadlocksReply struct {
		CheckedAt time.Time      `json:"checked_at"`
		Deadlocks []deadlockJSON `json:"deadlocks"`
	}
	deadlockJSON struct {
		Since    time.Time    `json:"since"`
		Sessions []clientJSON `json:"sessions"`
		Keys     []keyRefJSON `json:"keys"`
		Waits    []waitJSON   `json:"waits"`
		Behind   []clientJSON `json:"behind"`
	}
	keyRefJSON struct {
		Key  string `json:"key"`
		Kind string `json:"kind"`
	}
	waitJSON struct {
		SessionID string   `json:"session_id"`
		Key       string   `json:"key"`
		Kind      string   `json:"kind"`
		On        []string `json:"on"`
	}
)

// listDeadlocks is GET /v1/deadlocks.
func (a *API) listDeadlocks(w http.ResponseWriter, r *http.Request) {
	found, at := a.deadlocks.check()
	v := a.view()
	reply := deadlocksReply{CheckedAt: at.UTC(), Deadlocks: []deadlockJSON{}}
	sc := observeScope(r)
	for i := range found {
		// A scoped caller sees a deadlock only if it may observe every
		// key of it: a cycle through another team's keys would name
		// them and their holders.
		if !sc.seesDeadlock(&found[i]) {
			continue
		}
		reply.Deadlocks = append(reply.Deadlocks, v.deadlock(&found[i]))
	}
	writeJSON(w, http.StatusOK, reply)
}

func (v *view) deadlock(f *foundDeadlock) deadlockJSON {
	dj := deadlockJSON{Since: f.since.UTC(), Sessions: []clientJSON{}, Keys: []keyRefJSON{}, Waits: []waitJSON{}, Behind: []clientJSON{}}
	for _, s := range f.Sessions {
		dj.Sessions = append(dj.Sessions, v.session(s))
	}
	for _, s := range f.Behind {
		dj.Behind = append(dj.Behind, v.session(s))
	}
	for _, k := range f.Keys {
		dj.Keys = append(dj.Keys, keyRefJSON{k.Key, k.Kind})
	}
	for _, wt := range f.Waits {
		on := make([]string, len(wt.On))
		for i, s := range wt.On {
			on[i] = strconv.FormatUint(s, 10)
		}
		dj.Waits = append(dj.Waits, waitJSON{SessionID: strconv.FormatUint(wt.Session, 10), Key: wt.Key.Key, Kind: wt.Key.Kind, On: on})
	}
	return dj
}

// session describes a session of the wait-for graph, which knows only
// its id: the engine knows its connection number while it is open.
func (v *view) session(id uint64) clientJSON {
	sid := engine.SessionID(id)
	conn, open := uint64(0), false
	if v.eng != nil {
		conn, open = v.eng.SessionConn(sid)
	}
	return v.clientOf(sid, conn, open)
}
