// Package noisy is a tenant that misbehaves on a shared dflockd-ng: one
// identity of a policy file (docs/sharing.md)
// driven at every one of its quotas at once, to measure what it does to
// the other tenants (the suite's noisy workload).
//
// Start opens exactly Quota.Conns connections, each authenticated with
// the identity's token, and puts the identity at its lock and waiter
// quotas: a holder takes Locks−Waiters−1 locks, a waiter queues Waiters
// two-phase claims (e) on them, so one claim of room is left. Then, until
// Stop, every connection floods, each with FloodDepth requests in flight:
//
//   - churn: try-locks (l key 0) on fresh keys, each grant released at
//     once: the identity's claims touch its locks quota and come back, so
//     it is refused with error_max_locks whenever it is at it;
//   - waiters: more enqueues on the held keys, refused with
//     error_max_waiters (or error_max_locks while churn holds the last
//     claim);
//   - keys: kset of fresh keys, refused with error_max_keys once the
//     identity has made Keys of them;
//   - the rest (Conns−4): get of one key, plain volume;
//
// all of it paced together by the identity's rate quota (the server stops
// reading its connections until the rate allows), and a dialer opens one
// more connection DialRate times a second, each closed by the server at
// its auth (the conns quota). Every reply is checked against what its
// request may get at the quotas; anything else (an error_denied, a grant
// past a quota, a close) is a failure that Stop returns.
//
// A Tenant's goroutines own their connections; Stop may be called once,
// from any goroutine.
package noisy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Quota is the identity's quotas as its policy file states them; Start
// relies on them being enforced (Rate is the server's business only).
type Quota struct {
	Locks, Waiters, Keys, Conns int
}

// Config is one noisy tenant. Zero optional fields take their defaults.
type Config struct {
	Addr      string // host:port of the server
	Token     string // the identity's token
	Quota     Quota
	KeyPrefix string // every key's prefix; default "noisy"
	// FloodDepth is the requests in flight on each flooding connection;
	// default 32.
	FloodDepth int
	// DialRate is connections a second opened beyond the conns quota; 0:
	// none.
	DialRate int
	// DialAddr is where those connections go; default Addr. A Sink's
	// address makes the control (sink.go).
	DialAddr string
	// Lease of every claim, in seconds; default 600, longer than a run,
	// so that the quotas stay full through it.
	Lease int
}

// Bounds of a Config: the roles need these to exist.
const (
	minConns   = 5 // holder (then waiters' keys), waiter, churn, keys, one volume flood
	maxDepth   = 1024
	maxDials   = 10000 // a second; beyond it the dialer measures its own speed
	dialWait   = 2 * time.Second
	setupWait  = 10 * time.Second
	maxPending = 256 // bytes of a reply line worth quoting in an error
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("noisy: bad config")

func (c Config) withDefaults() Config {
	if c.KeyPrefix == "" {
		c.KeyPrefix = "noisy"
	}
	if c.FloodDepth == 0 {
		c.FloodDepth = 32
	}
	if c.DialAddr == "" {
		c.DialAddr = c.Addr
	}
	if c.Lease == 0 {
		c.Lease = 600
	}
	return c
}

func (c Config) validate() error {
	q := c.Quota
	switch {
	case c.Addr == "" || c.Token == "" || strings.ContainsAny(c.Token, "\r\n"):
		return fmt.Errorf("%w: an address and a one-line token are needed", ErrConfig)
	case q.Conns < minConns:
		return fmt.Errorf("%w: conns quota %d: the tenant's roles need at least %d connections", ErrConfig, q.Conns, minConns)
	case q.Waiters < 1 || q.Locks < 2*q.Waiters+2:
		// The holder holds Locks−Waiters−1 keys, and the waiter flood
		// enqueues on the ones beyond the first Waiters.
		return fmt.Errorf("%w: quotas locks=%d waiters=%d: want waiters ≥ 1 and locks ≥ 2×waiters+2", ErrConfig, q.Locks, q.Waiters)
	case q.Keys < 1:
		return fmt.Errorf("%w: keys quota %d must be ≥ 1", ErrConfig, q.Keys)
	case c.FloodDepth < 1 || c.FloodDepth > maxDepth:
		return fmt.Errorf("%w: flood depth %d out of [1, %d]", ErrConfig, c.FloodDepth, maxDepth)
	case c.DialRate < 0 || c.DialRate > maxDials:
		return fmt.Errorf("%w: dial rate %d out of [0, %d]", ErrConfig, c.DialRate, maxDials)
	case c.Lease < 1 || strings.ContainsAny(c.KeyPrefix, " \t\r\n") || len(c.KeyPrefix) > 100:
		return fmt.Errorf("%w: lease %d, key prefix %q", ErrConfig, c.Lease, c.KeyPrefix)
	}
	return nil
}

// Counts is what the tenant's requests got, from Start to Stop.
type Counts struct {
	Requests    uint64 `json:"requests"` // replies read, setup included
	Granted     uint64 `json:"granted"`  // churn grants (each released)
	MaxLocks    uint64 `json:"error_max_locks"`
	MaxWaiters  uint64 `json:"error_max_waiters"`
	MaxKeys     uint64 `json:"error_max_keys"`
	KeysMade    uint64 `json:"keys_ok"`       // kset answered ok (under the quota, or a key made in an earlier run)
	Reads       uint64 `json:"reads"`         // get answered
	Dials       uint64 `json:"dials"`         // connections opened beyond the conns quota (and judged before Stop)
	ConnsClosed uint64 `json:"conns_refused"` // of them, closed by the server at their auth
}

type counters struct {
	requests, granted, maxLocks, maxWaiters, maxKeys, keysMade, reads, dials, closed atomic.Uint64
}

// Tenant is a running noisy tenant.
type Tenant struct {
	cfg   Config
	conns []net.Conn
	stop  chan struct{}
	wg    sync.WaitGroup // the floods
	dials sync.WaitGroup // the dialer
	c     counters

	mu       sync.Mutex
	stopping bool
	err      error // the first failure
}

// Start dials the tenant's connections, authenticates them, fills its
// lock and waiter quotas and starts the floods and the dialer. The setup
// is bounded by ctx and by 10 s.
func Start(ctx context.Context, cfg Config) (*Tenant, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	t := &Tenant{cfg: cfg, stop: make(chan struct{})}
	ctx, cancel := context.WithTimeout(ctx, setupWait)
	defer cancel()
	rds := make([]*bufio.Reader, cfg.Quota.Conns)
	for i := 0; i < cfg.Quota.Conns; i++ {
		nc, rd, err := t.dialAuth(ctx)
		if err != nil {
			t.closeAll()
			return nil, fmt.Errorf("noisy: connection %d of the conns quota of %d: %w", i+1, cfg.Quota.Conns, err)
		}
		t.conns = append(t.conns, nc)
		rds[i] = rd
	}
	held := cfg.Quota.Locks - cfg.Quota.Waiters - 1
	lease := strconv.Itoa(cfg.Lease)
	var reqs [][]byte
	for i := 0; i < held; i++ {
		reqs = append(reqs, request("l", t.heldKey(i), "0 "+lease))
	}
	if err := t.exchange(t.conns[0], rds[0], reqs, func(_ int, r string) error {
		if _, err := grantToken(r, lease); err != nil {
			return err
		}
		return nil
	}); err != nil {
		t.closeAll()
		return nil, fmt.Errorf("noisy: holder: %w", err)
	}
	reqs = reqs[:0]
	for i := 0; i < cfg.Quota.Waiters; i++ {
		reqs = append(reqs, request("e", t.heldKey(i), lease))
	}
	if err := t.exchange(t.conns[1], rds[1], reqs, func(_ int, r string) error {
		if r != "queued" {
			return errors.New("want queued behind the holder")
		}
		return nil
	}); err != nil {
		t.closeAll()
		return nil, fmt.Errorf("noisy: waiters: %w", err)
	}
	for _, nc := range t.conns {
		_ = nc.SetDeadline(time.Time{})
	}
	// The holder only holds; the others flood.
	t.goFlood("waiters", t.conns[1], rds[1], t.waiterFlood())
	t.goFlood("churn", t.conns[2], rds[2], t.churnFlood())
	t.goFlood("keys", t.conns[3], rds[3], t.keysFlood())
	for i := 4; i < len(t.conns); i++ {
		t.goFlood("volume", t.conns[i], rds[i], t.volumeFlood())
	}
	if cfg.DialRate > 0 {
		t.dials.Add(1)
		go t.dialer()
	}
	return t, nil
}

// dialAuth opens one of the tenant's connections. A close at the auth is
// tried again until ctx ends: the connections of a tenant stopped just
// before may not all be gone from the server's count yet.
func (t *Tenant) dialAuth(ctx context.Context) (net.Conn, *bufio.Reader, error) {
	var d net.Dialer
	for {
		nc, err := d.DialContext(ctx, "tcp", t.cfg.Addr)
		if err != nil {
			return nil, nil, fmt.Errorf("dial %s: %w", t.cfg.Addr, err)
		}
		if dl, ok := ctx.Deadline(); ok {
			_ = nc.SetDeadline(dl)
		}
		rd := bufio.NewReader(nc)
		err = t.exchange(nc, rd, [][]byte{authLine(t.cfg.Token)}, func(_ int, r string) error {
			if r != "ok" {
				return errors.New("want ok")
			}
			return nil
		})
		if err == nil {
			return nc, rd, nil
		}
		_ = nc.Close()
		if !errors.Is(err, errClosed) || ctx.Err() != nil {
			return nil, nil, fmt.Errorf("auth: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// errClosed is a connection the server closed.
var errClosed = errors.New("connection closed by the server")

// Stop ends the floods and the dialer, closes every connection (the
// server then releases the tenant's locks and waiters; its keys stay) and
// returns what the requests got, and the first failure.
func (t *Tenant) Stop() (Counts, error) {
	t.mu.Lock()
	t.stopping = true
	t.mu.Unlock()
	close(t.stop)
	// The dialer first: once the floods' connections close, the conns
	// quota has room, and a dial in flight would rightly be admitted.
	t.dials.Wait()
	t.closeAll()
	t.wg.Wait()
	c := &t.c
	counts := Counts{Requests: c.requests.Load(), Granted: c.granted.Load(), MaxLocks: c.maxLocks.Load(),
		MaxWaiters: c.maxWaiters.Load(), MaxKeys: c.maxKeys.Load(), KeysMade: c.keysMade.Load(),
		Reads: c.reads.Load(), Dials: c.dials.Load(), ConnsClosed: c.closed.Load()}
	t.mu.Lock()
	defer t.mu.Unlock()
	return counts, t.err
}

func (t *Tenant) closeAll() {
	for _, nc := range t.conns {
		_ = nc.Close()
	}
}

// fail records the first failure, unless the tenant is stopping (whose
// closes end every flood with an error).
func (t *Tenant) fail(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopping && t.err == nil {
		t.err = err
	}
}

func (t *Tenant) heldKey(i int) string { return t.cfg.KeyPrefix + ".held." + strconv.Itoa(i) }

func authLine(token string) []byte { return []byte("auth\n_\n" + token + "\n") }

func request(cmd, key, arg string) []byte { return []byte(cmd + "\n" + key + "\n" + arg + "\n") }

// exchange writes reqs in one write and checks each reply in order.
func (t *Tenant) exchange(nc net.Conn, rd *bufio.Reader, reqs [][]byte, check func(i int, reply string) error) error {
	var buf []byte
	for _, r := range reqs {
		buf = append(buf, r...)
	}
	if _, err := nc.Write(buf); err != nil {
		return err
	}
	for i := range reqs {
		line, err := rd.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) || isReset(err) {
				err = errClosed
			}
			return fmt.Errorf("%w (to %q)", err, firstLines(reqs[i]))
		}
		t.c.requests.Add(1)
		line = strings.TrimSuffix(line, "\n")
		if err := check(i, line); err != nil {
			return fmt.Errorf("reply %q to %q: %w", quoted(line), firstLines(reqs[i]), err)
		}
	}
	return nil
}

// flood is one role: batch makes the next FloodDepth requests, check
// judges each reply and may return a follow-up request (a release).
type flood struct {
	batch func(n int) [][]byte
	check func(req []byte, reply string) (follow []byte, err error)
}

// goFlood runs f on nc until Stop: a batch of requests, their replies,
// then the follow-ups' replies.
func (t *Tenant) goFlood(role string, nc net.Conn, rd *bufio.Reader, f flood) {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		for {
			select {
			case <-t.stop:
				return
			default:
			}
			reqs := f.batch(t.cfg.FloodDepth)
			var follow [][]byte
			err := t.exchange(nc, rd, reqs, func(i int, reply string) error {
				next, err := f.check(reqs[i], reply)
				if next != nil {
					follow = append(follow, next)
				}
				return err
			})
			if err == nil && len(follow) > 0 {
				err = t.exchange(nc, rd, follow, func(_ int, reply string) error {
					if reply != "ok" {
						return errors.New("want ok to the release")
					}
					return nil
				})
			}
			if err != nil {
				t.fail(fmt.Errorf("noisy: %s flood: %w", role, err))
				return
			}
		}
	}()
}

// churnFlood: try-locks on fresh keys, each grant released.
func (t *Tenant) churnFlood() flood {
	lease := strconv.Itoa(t.cfg.Lease)
	n := 0
	return flood{
		batch: func(depth int) [][]byte {
			out := make([][]byte, depth)
			for i := range out {
				out[i] = request("l", t.cfg.KeyPrefix+".churn."+strconv.Itoa(n), "0 "+lease)
				n++
			}
			return out
		},
		check: func(req []byte, reply string) ([]byte, error) {
			if reply == "error_max_locks" {
				t.c.maxLocks.Add(1)
				return nil, nil
			}
			tok, err := grantToken(reply, lease)
			if err != nil {
				return nil, fmt.Errorf("%w, or error_max_locks", err)
			}
			t.c.granted.Add(1)
			key := strings.SplitN(string(req), "\n", 3)[1]
			return request("r", key, tok), nil
		},
	}
}

// waiterFlood: enqueues on the held keys the setup's waiters do not wait
// for.
func (t *Tenant) waiterFlood() flood {
	lease := strconv.Itoa(t.cfg.Lease)
	q := t.cfg.Quota
	free := q.Locks - 2*q.Waiters - 1 // held keys Waiters … Locks−Waiters−2
	n := 0
	return flood{
		batch: func(depth int) [][]byte {
			out := make([][]byte, depth)
			for i := range out {
				out[i] = request("e", t.heldKey(q.Waiters+n%free), lease)
				n++
			}
			return out
		},
		check: func(_ []byte, reply string) ([]byte, error) {
			switch reply {
			case "error_max_waiters":
				t.c.maxWaiters.Add(1)
			case "error_max_locks":
				t.c.maxLocks.Add(1)
			default:
				return nil, errors.New("want error_max_waiters or error_max_locks: the identity is at its waiters quota")
			}
			return nil, nil
		},
	}
}

// keysFlood: kset of fresh keys.
func (t *Tenant) keysFlood() flood {
	n := 0
	return flood{
		batch: func(depth int) [][]byte {
			out := make([][]byte, depth)
			for i := range out {
				out[i] = request("kset", t.cfg.KeyPrefix+".key."+strconv.Itoa(n), "v")
				n++
			}
			return out
		},
		check: func(_ []byte, reply string) ([]byte, error) {
			switch reply {
			case "error_max_keys":
				t.c.maxKeys.Add(1)
			case "ok":
				if made := t.c.keysMade.Add(1); made > uint64(2*t.cfg.Quota.Keys) {
					// This run's own keys and as many left by an earlier one.
					return nil, fmt.Errorf("%d keys made, over twice the keys quota of %d", made, t.cfg.Quota.Keys)
				}
			default:
				return nil, errors.New("want ok or error_max_keys")
			}
			return nil, nil
		},
	}
}

// volumeFlood: get of one key, over and over.
func (t *Tenant) volumeFlood() flood {
	key := t.cfg.KeyPrefix + ".volume"
	return flood{
		batch: func(depth int) [][]byte {
			out := make([][]byte, depth)
			for i := range out {
				out[i] = request("get", key, "_")
			}
			return out
		},
		check: func(_ []byte, reply string) ([]byte, error) {
			v, ok := strings.CutPrefix(reply, "ok ")
			if _, err := strconv.ParseInt(v, 10, 64); !ok || err != nil {
				return nil, errors.New("want ok <integer>")
			}
			t.c.reads.Add(1)
			return nil, nil
		},
	}
}

// dialer opens a connection beyond the conns quota DialRate times a
// second and wants the server to close it at its auth, with no reply.
func (t *Tenant) dialer() {
	defer t.dials.Done()
	every := time.Second / time.Duration(t.cfg.DialRate)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
		}
		if err := t.dialOnce(); err != nil {
			t.fail(fmt.Errorf("noisy: a connection beyond the conns quota: %w", err))
			return
		}
	}
}

func (t *Tenant) dialOnce() error {
	nc, err := net.DialTimeout("tcp", t.cfg.DialAddr, dialWait)
	if err != nil {
		return err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(dialWait))
	if _, err := nc.Write(authLine(t.cfg.Token)); err != nil {
		// Closed before the auth was even written.
		t.c.dials.Add(1)
		t.c.closed.Add(1)
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(nc, maxPending))
	var ne net.Error
	switch {
	case len(b) > 0:
		t.c.dials.Add(1)
		return fmt.Errorf("the server answered %q: want a close with no reply", b)
	case err == nil || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err):
		t.c.dials.Add(1)
		t.c.closed.Add(1)
		return nil
	case errors.As(err, &ne) && ne.Timeout():
		select {
		case <-t.stop:
			return nil // cut by Stop: not counted
		default:
		}
		t.c.dials.Add(1)
		return fmt.Errorf("no close within %v", dialWait)
	}
	return err
}

func isReset(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe"))
}

// grantToken checks "ok <32 hex> <lease>" and returns the token.
func grantToken(reply, lease string) (string, error) {
	f := strings.Fields(reply)
	if len(f) != 3 || f[0] != "ok" || len(f[1]) != 32 || f[2] != lease {
		return "", fmt.Errorf("want a grant \"ok <token> %s\"", lease)
	}
	return f[1], nil
}

func firstLines(req []byte) string {
	return strings.ReplaceAll(strings.TrimSuffix(string(req), "\n"), "\n", " ")
}

func quoted(s string) string {
	if len(s) > maxPending {
		return s[:maxPending] + "…"
	}
	return s
}
