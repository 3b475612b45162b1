package loop

import (
	"bufio"
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
)

// The lease-safety soak in miniature (issue #14): hundreds of connections
// contend for a few locks and semaphores with short leases, and the
// clients' own monotonic timestamps (the same clock as the in-process
// server's) are checked against what a correct server must never do.
const (
	safetyRun      = 8 * time.Second // new requests start for this long; the tail of waits and holds adds a few seconds
	safetyRunShort = 2 * time.Second
	safetyClients  = 240 // ~10 contenders per lock key: most lease ends hand the key to a waiter
	safetyLocks    = 20
	safetySems     = 4 // limits 2 and 3 alternately
	// safetyNearExpiry: a grant received this soon after another holder's
	// lease ran out (or before it) is counted as an expiry hand-off.
	safetyNearExpiry = 20 * time.Millisecond
	// safetyGrace: a reply later than its request's timeout plus this
	// means a hung server, not a slow machine.
	safetyGrace = 10 * time.Second
	// relockEarly, relockLate: the span of try-locks around a lease end;
	// it covers the up-to-1 ms of a truncated clock and the sleep's slack.
	relockEarly = 2 * time.Millisecond
	relockLate  = time.Millisecond
)

// never stands for a release or close that did not happen.
const never = time.Duration(math.MaxInt64)

// A safetyKey is a lock (limit 1) or a semaphore of the soak.
type safetyKey struct {
	name  string
	limit int
	sem   bool
}

// cmd is the lock command c ("l", "r", …) or its semaphore form.
func (k safetyKey) cmd(c string) string {
	if k.sem {
		return "s" + c
	}
	return c
}

// A safetyHold is one grant as its holder saw it. [from, end) is when the
// holder definitely held the key: the grant had reached it at from, and a
// correct server cannot have ended the hold before the earliest of
//   - leaseFrom+lease: leaseFrom is the send time of the request that last
//     (re)started the lease: the l, sl or e that was granted (a queued
//     grant's lease even starts later, at the hand-off), or the n, sn, w
//     or sw answered ok. The server read that request after it was sent.
//     An ok to a renew or w also shows the token was never lost between;
//   - released: the send time of its r/sr;
//   - closed: taken just before its connection was closed.
//
// Every timestamp errs towards a shorter interval, so intervals that
// overlap beyond the limit are a real violation whatever the delays.
// (Grants a client never read, as when it disconnects while waiting, are
// not in the model at all: that too only makes it more lenient.)
type safetyHold struct {
	key       safetyKey
	via       string // the request whose reply was the grant
	token     string
	client    int
	from      time.Duration
	leaseFrom time.Duration
	lease     time.Duration
	released  time.Duration
	closed    time.Duration
}

// end is the end of the definite interval and whether the lease set it.
func (h *safetyHold) end() (time.Duration, bool) {
	e := h.leaseFrom + h.lease
	return min(e, h.released, h.closed), e <= h.released && e <= h.closed
}

// A safetyTimeout is a timeout reply, which must not arrive before its
// request's send time plus the timeout asked for.
type safetyTimeout struct {
	cmd, key    string
	sent, recvd time.Duration
	timeout     time.Duration
	client      int
}

// A safetyViolation is one thing a correct server cannot have done, at the
// client-side instant it showed.
type safetyViolation struct {
	at  time.Duration
	msg string
}

type safetySoak struct {
	ts     *testServer
	base   time.Time
	stopAt time.Duration
	keys   []safetyKey
}

// now is monotonic time since the soak's start; time.Since reads the same
// monotonic clock as the server's timerwheel.MonoClock.
func (s *safetySoak) now() time.Duration { return time.Since(s.base) }

type safetyWorker struct {
	s        *safetySoak
	id       int
	c        net.Conn
	rd       *bufio.Reader
	open     *safetyHold // the grant it holds now; a worker holds one at a time
	holds    []*safetyHold
	timeouts []safetyTimeout
}

// TestLeaseSafetyUnderLoad checks, over a random workload of locks,
// try-locks, two-phase waits, renewals, releases, leases left to run out
// and disconnects, that no grant reaches a client while `limit` others
// definitely hold the key (see safetyHold) and that no timeout reply comes
// before its request's send time plus its timeout.
func TestLeaseSafetyUnderLoad(t *testing.T) {
	// A dedicated server: its read timeout outlasts every pause of the
	// workload, so no connection is closed behind the model's back.
	ts, err := startServer(Config{ReadTimeout: time.Minute}, engine.Config{MaxLocks: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ts.stop)
	run := safetyRun
	if testing.Short() {
		run = safetyRunShort
	}
	s := &safetySoak{ts: ts, base: time.Now(), stopAt: run}
	for i := range safetyLocks {
		s.keys = append(s.keys, safetyKey{name: key(fmt.Sprintf("safety-l%d", i)), limit: 1})
	}
	for i := range safetySems {
		s.keys = append(s.keys, safetyKey{name: key(fmt.Sprintf("safety-s%d", i)), limit: 2 + i%2, sem: true})
	}

	workers := make([]*safetyWorker, safetyClients)
	var wg sync.WaitGroup
	for i := range workers {
		w := &safetyWorker{s: s, id: i}
		workers[i] = w
		wg.Go(func() {
			if err := w.run(); err != nil {
				t.Errorf("client %d: %v", w.id, err)
			}
		})
	}
	wg.Wait()
	elapsed := s.now()

	var holds []*safetyHold
	var timeouts []safetyTimeout
	for _, w := range workers {
		holds = append(holds, w.holds...)
		timeouts = append(timeouts, w.timeouts...)
	}
	gv, handoffs, closest := checkHolds(holds)
	tv, closestTimeout := checkTimeouts(timeouts)
	t.Logf("%v: %d grants checked, %d expiry hand-offs (closest %v after the lease end), %d timeout replies checked (closest %v after the timeout)",
		elapsed.Round(time.Millisecond), len(holds), handoffs, closest, len(timeouts), closestTimeout)
	if handoffs == 0 && !testing.Short() {
		t.Errorf("no lease expiry handed a key over: the workload missed its point")
	}
	report(t, "grants while the key was definitely held up to its limit", gv)
	report(t, "timeout replies before the timeout", tv)
}

// report fails the test with the first few violations, earliest first.
func report(t *testing.T, what string, vs []safetyViolation) {
	t.Helper()
	if len(vs) == 0 {
		return
	}
	slices.SortFunc(vs, func(a, b safetyViolation) int { return cmp.Compare(a.at, b.at) })
	var b strings.Builder
	for _, v := range vs[:min(len(vs), 10)] {
		fmt.Fprintf(&b, "\n  %v %s", v.at, v.msg)
	}
	t.Errorf("%d %s; the first ones:%s", len(vs), what, b.String())
}

// checkHolds finds the grants received while `limit` other holds of the
// key definitely went on. Checking at the grants' receive instants is
// enough: if more than limit intervals share an instant, they all contain
// the latest of their starts.
//
// It also counts expiry hand-offs as far as the clients can tell: grants
// whose deciding other hold ended by its lease, less than safetyNearExpiry
// before (or, wrongly, after) the grant arrived; closest is the smallest
// such margin, the test's resolution.
func checkHolds(holds []*safetyHold) (violations []safetyViolation, handoffs int, closest time.Duration) {
	closest = never
	byKey := map[string][]*safetyHold{}
	for _, h := range holds {
		// A reply slower than the whole lease leaves an empty interval:
		// the hold may have ended on the server before it was seen.
		if end, _ := h.end(); end > h.from {
			byKey[h.key.name] = append(byKey[h.key.name], h)
		}
	}
	for _, hs := range byKey {
		for _, g := range hs {
			// The others that had received their grants by g.from, by
			// descending end: the limit-th one decides.
			var others []*safetyHold
			for _, h := range hs {
				if h != g && h.from <= g.from {
					others = append(others, h)
				}
			}
			if len(others) < g.key.limit {
				continue
			}
			slices.SortFunc(others, func(a, b *safetyHold) int {
				ea, _ := a.end()
				eb, _ := b.end()
				return cmp.Compare(eb, ea)
			})
			h := others[g.key.limit-1]
			end, byLease := h.end()
			margin := g.from - end
			if byLease && margin < safetyNearExpiry {
				handoffs++
				closest = min(closest, margin)
			}
			if margin < 0 {
				violations = append(violations, safetyViolation{g.from, fmt.Sprintf(
					"%s (limit %d): %s grant to client %d received %.1fµs before client %d's %s hold (lease from %v for %v) could have ended",
					g.key.name, g.key.limit, g.via, g.client, us(-margin), h.client, h.via, h.leaseFrom, h.lease)})
			}
		}
	}
	return violations, handoffs, closest
}

// checkTimeouts finds the timeout replies that came before their time.
func checkTimeouts(ts []safetyTimeout) (violations []safetyViolation, closest time.Duration) {
	closest = never
	for _, to := range ts {
		margin := to.recvd - to.sent - to.timeout
		closest = min(closest, margin)
		if margin < 0 {
			violations = append(violations, safetyViolation{to.recvd, fmt.Sprintf(
				"%s %s by client %d: timeout %.1fµs before its %v were up",
				to.cmd, to.key, to.client, us(-margin), to.timeout)})
		}
	}
	return violations, closest
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func secs(n int) time.Duration { return time.Duration(n) * time.Second }

// shortLease is a lease in seconds, mostly the shortest the protocol has:
// the more expiries, the more chances to see one come early.
func shortLease() int {
	if rand.IntN(4) == 0 {
		return 2
	}
	return 1
}

// run issues random requests until the soak's end, then closes.
func (w *safetyWorker) run() error {
	if err := w.dial(); err != nil {
		return err
	}
	defer w.disconnect()
	for w.s.now() < w.s.stopAt {
		if w.open == nil { // hold may leave a fresh grant behind
			k := w.s.keys[rand.IntN(len(w.s.keys))]
			if err := w.acquire(k); err != nil {
				return err
			}
		}
		if w.open != nil {
			if err := w.hold(); err != nil {
				return err
			}
		}
		time.Sleep(rand.N(50 * time.Millisecond))
	}
	return nil
}

func (w *safetyWorker) dial() error {
	c, err := net.Dial("tcp", w.s.ts.addr)
	if err != nil {
		return err
	}
	w.c, w.rd = c, bufio.NewReader(c)
	return nil
}

// disconnect closes the connection, which ends what it holds.
func (w *safetyWorker) disconnect() {
	closed := w.s.now()
	w.c.Close()
	if w.open != nil {
		w.open.closed = closed
		w.open = nil
	}
}

// request sends one request and reads its reply. sent is taken just before
// the write and recvd just after the read: the server read the request
// after sent and had replied by recvd.
func (w *safetyWorker) request(cmd, key, arg string, timeout time.Duration) (reply string, sent, recvd time.Duration, err error) {
	msg := []byte(cmd + "\n" + key + "\n" + arg + "\n")
	w.c.SetReadDeadline(time.Now().Add(timeout + safetyGrace))
	sent = w.s.now()
	if _, err = w.c.Write(msg); err != nil {
		return "", sent, sent, err
	}
	reply, err = w.rd.ReadString('\n')
	recvd = w.s.now()
	if err != nil {
		return "", sent, recvd, fmt.Errorf("%s %s %s: %v", cmd, key, arg, err)
	}
	return strings.TrimSuffix(reply, "\n"), sent, recvd, nil
}

// acquire tries k one of several ways; a grant leaves w.open set.
func (w *safetyWorker) acquire(k safetyKey) error {
	lease := shortLease()
	switch p := rand.IntN(100); {
	case p < 35:
		return w.lock(k, 1+rand.IntN(3), lease)
	case p < 50:
		return w.lock(k, 0, lease) // try-lock
	case p < 85:
		return w.twoPhase(k, lease)
	default:
		return w.abandonWait(k, lease)
	}
}

// lock sends l or sl.
func (w *safetyWorker) lock(k safetyKey, timeout, lease int) error {
	arg := fmt.Sprintf("%d %d", timeout, lease)
	if k.sem {
		arg = fmt.Sprintf("%d %d %d", timeout, k.limit, lease)
	}
	cmd := k.cmd("l")
	reply, sent, recvd, err := w.request(cmd, k.name, arg, secs(timeout))
	if err != nil {
		return err
	}
	if reply == "timeout" {
		w.timedOut(cmd, k, sent, recvd, timeout)
		return nil
	}
	_, err = w.granted(k, cmd, reply, "ok", sent, recvd, lease)
	return err
}

// granted records the grant in reply ("<status> <token> <lease>").
func (w *safetyWorker) granted(k safetyKey, via, reply, status string, sent, recvd time.Duration, lease int) (string, error) {
	f := strings.Fields(reply)
	if len(f) != 3 || f[0] != status || !isToken(f[1]) || f[2] != strconv.Itoa(lease) {
		return "", fmt.Errorf("%s %s: unexpected reply %q", via, k.name, reply)
	}
	w.open = &safetyHold{key: k, via: via, token: f[1], client: w.id, from: recvd, leaseFrom: sent,
		lease: secs(lease), released: never, closed: never}
	w.holds = append(w.holds, w.open)
	return f[1], nil
}

func (w *safetyWorker) timedOut(cmd string, k safetyKey, sent, recvd time.Duration, timeout int) {
	if timeout > 0 { // a try's immediate timeout bounds nothing
		w.timeouts = append(w.timeouts, safetyTimeout{cmd: cmd, key: k.name, sent: sent, recvd: recvd,
			timeout: secs(timeout), client: w.id})
	}
}

// twoPhase sends e or se, pauses, then w or sw.
func (w *safetyWorker) twoPhase(k safetyKey, lease int) error {
	arg := strconv.Itoa(lease)
	if k.sem {
		arg = fmt.Sprintf("%d %d", k.limit, lease)
	}
	enq := k.cmd("e")
	reply, sent, recvd, err := w.request(enq, k.name, arg, 0)
	if err != nil {
		return err
	}
	tok := ""
	if reply != "queued" {
		if tok, err = w.granted(k, enq, reply, "acquired", sent, recvd, lease); err != nil {
			return err
		}
	}
	// Let the queue move before observing the grant; now and then long
	// enough for an unobserved grant to lapse.
	pause := rand.N(200 * time.Millisecond)
	if rand.IntN(10) == 0 {
		pause = secs(lease) + rand.N(time.Second)
	}
	time.Sleep(pause)
	wait, timeout := k.cmd("w"), rand.IntN(3) // 0: w only looks
	reply, sent, recvd, err = w.request(wait, k.name, strconv.Itoa(timeout), secs(timeout))
	if err != nil {
		return err
	}
	switch {
	case reply == "error_lease_expired":
		w.open = nil // its definite interval ended with the lease
		return nil
	case reply == "timeout" && tok == "":
		w.timedOut(wait, k, sent, recvd, timeout)
		return nil
	case tok == "":
		_, err = w.granted(k, enq+"+"+wait, reply, "ok", sent, recvd, lease)
		return err
	}
	// Observing a fast-path grant restarts its lease at the server's now,
	// after this w was sent.
	if reply != fmt.Sprintf("ok %s %d", tok, lease) {
		return fmt.Errorf("%s %s after acquired %s: unexpected reply %q", wait, k.name, tok, reply)
	}
	w.open.leaseFrom = sent
	return nil
}

// abandonWait queues on k and disconnects without reading the outcome:
// the server must drop the waiter, or release what it granted meanwhile.
func (w *safetyWorker) abandonWait(k safetyKey, lease int) error {
	if rand.IntN(2) == 0 {
		arg := fmt.Sprintf("3 %d", lease)
		if k.sem {
			arg = fmt.Sprintf("3 %d %d", k.limit, lease)
		}
		if _, err := w.c.Write([]byte(k.cmd("l") + "\n" + k.name + "\n" + arg + "\n")); err != nil {
			return err
		}
	} else {
		if err := w.twoPhaseQueued(k, lease); err != nil {
			return err
		}
	}
	time.Sleep(50*time.Millisecond + rand.N(350*time.Millisecond))
	w.disconnect()
	return w.dial()
}

// twoPhaseQueued sends e or se and, unless granted at once, a w nobody reads.
func (w *safetyWorker) twoPhaseQueued(k safetyKey, lease int) error {
	arg := strconv.Itoa(lease)
	if k.sem {
		arg = fmt.Sprintf("%d %d", k.limit, lease)
	}
	enq := k.cmd("e")
	reply, sent, recvd, err := w.request(enq, k.name, arg, 0)
	if err != nil {
		return err
	}
	if reply != "queued" {
		_, err = w.granted(k, enq, reply, "acquired", sent, recvd, lease)
		return err // held until the disconnect
	}
	_, err = w.c.Write([]byte(k.cmd("w") + "\n" + k.name + "\n3\n"))
	return err
}

// hold does something with w.open: release it, renew it, let its lease run
// out while others wait (half the time re-locking as it ends), or
// disconnect.
func (w *safetyWorker) hold() error {
	h := w.open
	if w.s.now() >= w.s.stopAt {
		return w.release() // the soak is over: end promptly
	}
	switch p := rand.IntN(100); {
	case p < 20:
		time.Sleep(rand.N(200 * time.Millisecond))
		return w.release()
	case p < 35:
		for range 1 + rand.IntN(2) {
			time.Sleep(200*time.Millisecond + rand.N(500*time.Millisecond))
			if err := w.renew(); err != nil || w.open == nil {
				return err
			}
		}
		time.Sleep(rand.N(200 * time.Millisecond))
		return w.release()
	case p < 85:
		// Overrun: no release, and no renew but at the start; the
		// lease end must hand the key over, and no earlier than the
		// lease allows. A grant that came after a wait started its
		// lease at the hand-off, which the client cannot see: the
		// model counts from the send of the l or w instead, too early
		// to catch an expiry that is only a little early. One renew at
		// once gives it a lease start that lags the server's by a
		// round trip only.
		if h.from-h.leaseFrom > 5*time.Millisecond {
			if err := w.renew(); err != nil || w.open == nil {
				return err
			}
		}
		if rand.IntN(2) == 0 {
			return w.relockAtLeaseEnd()
		}
		time.Sleep(h.leaseFrom + h.lease + 20*time.Millisecond + rand.N(400*time.Millisecond) - w.s.now())
		w.open = nil
		return nil
	default:
		time.Sleep(rand.N(300 * time.Millisecond))
		w.disconnect()
		return w.dial()
	}
}

// relockAtLeaseEnd lets w.open's lease run out while it tries to lock the
// key again, with try-locks sent back to back around the lease's end. A
// try-lock makes the server evict a holder whose lease it deems over and
// hand the key on at once, without waiting for its timer: so these probe
// the exact instant the server thinks the lease ends, as a client
// re-locking on a schedule would. The probe may be granted the key; the
// caller goes on holding it.
func (w *safetyWorker) relockAtLeaseEnd() error {
	h := w.open
	end := h.leaseFrom + h.lease
	time.Sleep(end - relockEarly - w.s.now())
	w.open = nil // from now on it holds by the lease alone
	for w.open == nil && w.s.now() < end+relockLate {
		if err := w.lock(h.key, 0, shortLease()); err != nil {
			return err
		}
	}
	return nil
}

// renew sends n or sn with a new lease; an ok restarts the lease at the
// server's now, after the renew was sent. An error means the hold is over.
func (w *safetyWorker) renew() error {
	h := w.open
	lease := shortLease()
	cmd := h.key.cmd("n")
	reply, sent, _, err := w.request(cmd, h.key.name, fmt.Sprintf("%s %d", h.token, lease), 0)
	if err != nil {
		return err
	}
	switch reply {
	case "ok " + strconv.Itoa(lease):
		h.leaseFrom, h.lease = sent, secs(lease)
	case "error":
		w.open = nil
	default:
		return fmt.Errorf("%s %s: unexpected reply %q", cmd, h.key.name, reply)
	}
	return nil
}

// release sends r or sr; the hold ends, for the model, when it is sent.
// An error is allowed: the lease may have run out on the way.
func (w *safetyWorker) release() error {
	h := w.open
	cmd := h.key.cmd("r")
	reply, sent, _, err := w.request(cmd, h.key.name, h.token, 0)
	h.released, w.open = sent, nil // even if the reply is lost: the server may have read it
	if err != nil {
		return err
	}
	if reply != "ok" && reply != "error" {
		return fmt.Errorf("%s %s: unexpected reply %q", cmd, h.key.name, reply)
	}
	return nil
}
