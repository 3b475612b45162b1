package baseline

import (
	"errors"
	"sync"
	"time"
)

// Outcomes of table operations that are not grants; the server maps them
// to dflockd's status words.
var (
	errTimeout       = errors.New("timeout")
	errMaxLocks      = errors.New("error_max_locks")
	errLimitMismatch = errors.New("error_limit_mismatch")
	errNotHeld       = errors.New("error") // unknown key or token, or lease expired
	errShutdown      = errors.New("error") // server closing while an acquire waits
)

// table is the whole lock state behind one mutex, as in dflockd: every
// request of every connection serialises on mu.
type table struct {
	mu       sync.Mutex
	res      map[string]*resource            // namespaced key ("lock:k", "sem:k") → resource
	byConn   map[uint64]map[*holder]struct{} // what each connection holds, for auto-release
	tokens   *tokenSource
	maxLocks int
	quit     <-chan struct{} // closed when the server shuts down: waiters give up
}

type resource struct {
	key        string
	limit      int
	holders    map[string]*holder // token → holder
	waiters    []*waiter          // FIFO
	lastActive time.Time
}

type holder struct {
	res     *resource
	token   string
	conn    uint64
	lease   time.Duration
	expires time.Time
}

type waiter struct {
	conn    uint64
	lease   time.Duration
	granted bool         // set under the mutex when a grant is sent on ch
	ch      chan *holder // buffered 1: the granter never blocks
}

func newTable(maxLocks int, quit <-chan struct{}) *table {
	return &table{
		res:      map[string]*resource{},
		byConn:   map[uint64]map[*holder]struct{}{},
		tokens:   newTokenSource(),
		maxLocks: maxLocks,
		quit:     quit,
	}
}

// acquire takes one of limit slots of key for conn, waiting up to timeout in
// FIFO order. It returns the grant or errTimeout, errMaxLocks,
// errLimitMismatch, errShutdown.
func (t *table) acquire(key string, limit int, timeout, lease time.Duration, conn uint64) (*holder, error) {
	now := time.Now()
	t.mu.Lock()
	r := t.res[key]
	if r == nil {
		if len(t.res) >= t.maxLocks {
			t.mu.Unlock()
			return nil, errMaxLocks
		}
		r = &resource{key: key, limit: limit, holders: map[string]*holder{}}
		t.res[key] = r
	} else if r.limit != limit {
		t.mu.Unlock()
		return nil, errLimitMismatch
	}
	r.lastActive = now
	t.expireLocked(r, now)
	if len(r.holders) < r.limit && len(r.waiters) == 0 {
		h := t.grantLocked(r, conn, lease, now)
		t.mu.Unlock()
		return h, nil
	}
	if timeout <= 0 {
		t.mu.Unlock()
		return nil, errTimeout
	}
	w := &waiter{conn: conn, lease: lease, ch: make(chan *holder, 1)}
	r.waiters = append(r.waiters, w)
	t.mu.Unlock()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case h := <-w.ch:
		return h, nil
	case <-timer.C:
	case <-t.quit:
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if w.granted {
		// Granted between the timer firing and taking the lock: the grant
		// stands, as in dflockd.
		return <-w.ch, nil
	}
	for i, x := range r.waiters {
		if x == w {
			r.waiters = append(r.waiters[:i], r.waiters[i+1:]...)
			break
		}
	}
	select {
	case <-t.quit:
		return nil, errShutdown
	default:
		return nil, errTimeout
	}
}

// grantLocked makes conn a holder of r.
func (t *table) grantLocked(r *resource, conn uint64, lease time.Duration, now time.Time) *holder {
	h := &holder{res: r, token: t.tokens.next(), conn: conn, lease: lease, expires: now.Add(lease)}
	r.holders[h.token] = h
	held := t.byConn[conn]
	if held == nil {
		held = map[*holder]struct{}{}
		t.byConn[conn] = held
	}
	held[h] = struct{}{}
	return h
}

// dropLocked removes h from its resource and hands freed slots to waiters.
func (t *table) dropLocked(h *holder, now time.Time) {
	r := h.res
	delete(r.holders, h.token)
	if held := t.byConn[h.conn]; held != nil {
		delete(held, h)
		if len(held) == 0 {
			delete(t.byConn, h.conn)
		}
	}
	for len(r.holders) < r.limit && len(r.waiters) > 0 {
		w := r.waiters[0]
		r.waiters[0] = nil
		r.waiters = r.waiters[1:]
		ng := t.grantLocked(r, w.conn, w.lease, now)
		w.granted = true
		w.ch <- ng
	}
}

// expireLocked drops r's holders whose lease ran out.
func (t *table) expireLocked(r *resource, now time.Time) {
	for _, h := range r.holders {
		if !now.Before(h.expires) {
			t.dropLocked(h, now)
		}
	}
}

// release frees the slot held with token.
func (t *table) release(key, token string) error {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.res[key]
	if r == nil {
		return errNotHeld
	}
	h := r.holders[token]
	if h == nil {
		return errNotHeld
	}
	r.lastActive = now
	t.dropLocked(h, now)
	return nil
}

// renew resets the lease of the slot held with token to now+lease.
func (t *table) renew(key, token string, lease time.Duration) error {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.res[key]
	if r == nil {
		return errNotHeld
	}
	h := r.holders[token]
	if h == nil || !now.Before(h.expires) {
		return errNotHeld
	}
	r.lastActive = now
	h.lease, h.expires = lease, now.Add(lease)
	return nil
}

// sweep enforces leases on every resource (the 1 s sweeper).
func (t *table) sweep(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.res {
		t.expireLocked(r, now)
	}
}

// gc forgets resources idle for longer than maxIdle, as dflockd's GC does;
// until then they count against maxLocks.
func (t *table) gc(now time.Time, maxIdle time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, r := range t.res {
		if len(r.holders) == 0 && len(r.waiters) == 0 && now.Sub(r.lastActive) > maxIdle {
			delete(t.res, k)
		}
	}
}

// disconnect releases everything conn holds (auto-release on disconnect).
func (t *table) disconnect(conn uint64) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for h := range t.byConn[conn] {
		t.dropLocked(h, now)
	}
	delete(t.byConn, conn)
}
