package fakedflockd

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

type lock struct {
	holder  *grant
	waiters []*waiter // FIFO
}

type grant struct {
	token   string
	conn    int
	lease   int // seconds
	expires time.Time
	timer   *time.Timer
}

type waiter struct {
	conn  int
	lease int
	ch    chan *grant // buffered: a grant is handed over under s.mu without blocking
}

// execute runs one authenticated request and returns the reply line.
func (s *Server) execute(conn int, req Request) string {
	switch req.Cmd {
	case "ping":
		return "ok"
	case "stats":
		return "ok " + s.stats()
	case "auth":
		return "error" // auth not configured, or not the first request
	case "l", "n", "r":
	default:
		return "error"
	}
	if req.Key == "" || strings.ContainsAny(req.Key, " \t") {
		return "error"
	}
	f := strings.Fields(req.Arg)
	switch req.Cmd {
	case "l":
		if len(f) < 1 || len(f) > 2 {
			return "error"
		}
		timeout, err := strconv.Atoi(f[0])
		if err != nil || timeout < 0 {
			return "error"
		}
		lease, ok := s.leaseArg(f[1:])
		if !ok {
			return "error"
		}
		return s.lock(conn, req.Key, time.Duration(timeout)*time.Second, lease)
	case "n":
		if len(f) < 1 || len(f) > 2 {
			return "error"
		}
		lease, ok := s.leaseArg(f[1:])
		if !ok {
			return "error"
		}
		return s.renew(req.Key, f[0], lease)
	default: // "r"
		return s.release(req.Key, strings.TrimSpace(req.Arg))
	}
}

func (s *Server) leaseArg(f []string) (int, bool) {
	if len(f) == 0 {
		return s.opts.DefaultLease, true
	}
	n, err := strconv.Atoi(f[0])
	return n, err == nil && n > 0
}

func grantReply(g *grant) string {
	return "ok " + g.token + " " + strconv.Itoa(g.lease)
}

func (s *Server) lock(conn int, key string, timeout time.Duration, lease int) string {
	s.mu.Lock()
	lk := s.mu.locks[key]
	if lk == nil {
		lk = &lock{}
		s.mu.locks[key] = lk
	}
	if lk.holder == nil && len(lk.waiters) == 0 {
		g := s.grantLocked(key, lk, conn, lease)
		s.mu.Unlock()
		return grantReply(g)
	}
	if timeout == 0 {
		s.mu.Unlock()
		return "timeout"
	}
	w := &waiter{conn: conn, lease: lease, ch: make(chan *grant, 1)}
	lk.waiters = append(lk.waiters, w)
	s.mu.Unlock()

	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case g := <-w.ch:
		return grantReply(g)
	case <-t.C:
	case <-s.done:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(lk.waiters, w); i >= 0 {
		lk.waiters = slices.Delete(lk.waiters, i, i+1)
		return "timeout"
	}
	return grantReply(<-w.ch) // granted while we were timing out
}

func (s *Server) renew(key, token string, lease int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	lk := s.mu.locks[key]
	if lk == nil || lk.holder == nil || lk.holder.token != token || !time.Now().Before(lk.holder.expires) {
		return "error"
	}
	g := lk.holder
	g.lease = lease
	g.expires = time.Now().Add(time.Duration(lease) * time.Second)
	g.timer.Reset(time.Duration(lease) * time.Second)
	return "ok " + strconv.Itoa(lease)
}

func (s *Server) release(key, token string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	lk := s.mu.locks[key]
	if lk == nil || lk.holder == nil || lk.holder.token != token {
		return "error"
	}
	s.dropHolderLocked(key, lk)
	return "ok"
}

// Revoke expires key's current holder at once, as if its lease had run
// out, and reports whether there was one.
func (s *Server) Revoke(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	lk := s.mu.locks[key]
	if lk == nil || lk.holder == nil {
		return false
	}
	s.dropHolderLocked(key, lk)
	return true
}

// Holder returns the token currently holding key.
func (s *Server) Holder(key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lk := s.mu.locks[key]; lk != nil && lk.holder != nil {
		return lk.holder.token, true
	}
	return "", false
}

func (s *Server) grantLocked(key string, lk *lock, conn, lease int) *grant {
	var b [16]byte
	rand.Read(b[:])
	d := time.Duration(lease) * time.Second
	g := &grant{token: hex.EncodeToString(b[:]), conn: conn, lease: lease, expires: time.Now().Add(d)}
	g.timer = time.AfterFunc(d, func() { s.expire(key, g) })
	lk.holder = g
	return g
}

// expire runs when g's timer fires. A renewal may have moved the expiry
// after the timer fired but before we got the mutex; then nothing happens.
func (s *Server) expire(key string, g *grant) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lk := s.mu.locks[key]
	if lk.holder != g || time.Now().Before(g.expires) {
		return
	}
	s.dropHolderLocked(key, lk)
}

// dropHolderLocked frees key and grants it to the queue head.
func (s *Server) dropHolderLocked(key string, lk *lock) {
	lk.holder.timer.Stop()
	lk.holder = nil
	if len(lk.waiters) > 0 {
		w := lk.waiters[0]
		lk.waiters = lk.waiters[1:]
		w.ch <- s.grantLocked(key, lk, w.conn, w.lease)
	}
}

// dropConnLocked is disconnect cleanup: the connection's queued waits are
// cancelled and its held locks released (auto-release-on-disconnect).
func (s *Server) dropConnLocked(conn int) {
	for key, lk := range s.mu.locks {
		lk.waiters = slices.DeleteFunc(lk.waiters, func(w *waiter) bool { return w.conn == conn })
		if lk.holder != nil && lk.holder.conn == conn {
			s.dropHolderLocked(key, lk)
		}
	}
}

type statsLock struct {
	Key          string  `json:"key"`
	OwnerConnID  int     `json:"owner_conn_id"`
	LeaseExpires float64 `json:"lease_expires_in_s"`
	Waiters      int     `json:"waiters"`
}

type statsIdle struct {
	Key string `json:"key"`
}

func (s *Server) stats() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	doc := struct {
		Connections    int         `json:"connections"`
		Locks          []statsLock `json:"locks"`
		Semaphores     []statsLock `json:"semaphores"`
		IdleLocks      []statsIdle `json:"idle_locks"`
		IdleSemaphores []statsIdle `json:"idle_semaphores"`
	}{Connections: len(s.mu.conns), Locks: []statsLock{}, Semaphores: []statsLock{}, IdleLocks: []statsIdle{}, IdleSemaphores: []statsIdle{}}
	for _, key := range slices.Sorted(maps.Keys(s.mu.locks)) {
		lk := s.mu.locks[key]
		if lk.holder == nil {
			if len(lk.waiters) == 0 {
				doc.IdleLocks = append(doc.IdleLocks, statsIdle{Key: key})
			}
			continue
		}
		doc.Locks = append(doc.Locks, statsLock{Key: key, OwnerConnID: lk.holder.conn,
			LeaseExpires: time.Until(lk.holder.expires).Seconds(), Waiters: len(lk.waiters)})
	}
	b, _ := json.Marshal(doc)
	return string(b)
}
