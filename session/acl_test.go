package session

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/policy"
	"github.com/dflockd-ng/dflockd/vocab"
)

func mustPolicy(t testing.TB, src string) *policy.Policy {
	t.Helper()
	src = strings.NewReplacer("%A", policy.TokenHash("tok-a"), "%B", policy.TokenHash("tok-b"),
		"%O", policy.TokenHash("tok-ops")).Replace(src)
	p, err := policy.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const teamsPolicy = `
identity team-a
  token %A
  allow lock,read,write,signal,listen,observe a/*
  quota conns=2
identity team-b
  token %B
  allow * b/*
identity ops
  token %O
  allow observe *
`

func aclFake(t *testing.T, src string, profile vocab.Profile) *fakeServer {
	return newFakeServer(t, Config{Policy: mustPolicy(t, src), AuthToken: testAuth, Profile: profile,
		ReadTimeout: 30 * time.Second}, engine.Config{})
}

// A policy's identities: a token names one; every request touching a key
// is checked; a refusal is error_denied on a connection that stays open;
// the --auth-token holder may do everything; a token no identity has is
// today's failed auth.
func TestPolicyIdentitiesAndDenials(t *testing.T) {
	fs := aclFake(t, teamsPolicy, vocab.ProfileV2)
	a := fs.open()
	if got := fs.traffic(a, request("auth", "_", "tok-a")); got != "ok\n" {
		t.Fatalf("auth tok-a: %q", got)
	}
	if got := fs.traffic(a, request("l", "a/job", "0 10")); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("team-a l a/job: %q", got)
	}
	for _, req := range []string{
		request("l", "b/job", "0 10"), request("r", "b/job", tokenFor(1)), request("n", "b/job", tokenFor(1)),
		request("e", "b/job", "10"), request("w", "b/job", "0"), request("sl", "b/sem", "0 3"),
		request("incr", "b/n", "1"), request("get", "b/n", "_"), request("kget", "b/k", "_"),
		request("watch", "b/k", "_"), request("watch", ">", "_"), request("listen", "b.>", "_"),
		request("signal", "b.x", "hi"), request("elect", "b/e", "0 10"), request("observe", "b/e", "_"),
	} {
		if got := fs.traffic(a, req); got != "error_denied\n" {
			t.Fatalf("team-a %q: %q, want error_denied", req, got)
		}
	}
	if a.closed {
		t.Fatal("a refusal closed the connection")
	}
	if got := fs.traffic(a, request("ping", "_", "_")); got != "ok\n" {
		t.Fatalf("ping after refusals: %q", got)
	}
	refusals := fs.hub.Refusals()
	if len(refusals) != 15 || refusals[0].Identity != "team-a" || refusals[0].Command != "l" || refusals[0].Key != "b/job" ||
		!strings.Contains(refusals[0].Reason, "deny by default") {
		t.Fatalf("refusal log: %d entries, first %+v", len(refusals), refusals[0])
	}

	op := fs.open()
	if got := fs.traffic(op, request("auth", "_", testAuth)); got != "ok\n" {
		t.Fatalf("auth with --auth-token: %q", got)
	}
	if got := fs.traffic(op, request("l", "b/job", "0 10")); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("--auth-token holder l b/job: %q", got)
	}

	bad := fs.open()
	got := fs.traffic(bad, request("auth", "_", "tok-nobody"))
	expectCooldownClose(t, fs, bad, got, "error_auth\n")

	noAuth := fs.open()
	got = fs.traffic(noAuth, request("l", "a/x", "0"))
	expectCooldownClose(t, fs, noAuth, got, "error_auth\n")
}

// stats shows an identity only the keys it may observe, and its own
// connections; an identity with no observe rule is refused it.
func TestPolicyScopedStats(t *testing.T) {
	fs := aclFake(t, teamsPolicy, vocab.ProfileRF)
	a, b, op := fs.open(), fs.open(), fs.open()
	fs.traffic(a, request("auth", "_", "tok-a"))
	fs.traffic(b, request("auth", "_", "tok-b"))
	fs.traffic(op, request("auth", "_", "tok-ops"))
	fs.traffic(a, request("l", "a/held", "0 60"))
	fs.traffic(b, request("l", "b/held", "0 60"))
	fs.traffic(b, request("incr", "b/count", "1"))
	sa := fs.traffic(a, request("stats", "_", "_"))
	if !strings.Contains(sa, `"a/held"`) || strings.Contains(sa, "b/") || !strings.Contains(sa, `"connections":1`) {
		t.Fatalf("team-a's stats: %s", sa)
	}
	sb := fs.traffic(b, request("stats", "_", "_"))
	if got := fs.traffic(b, request("stats", "_", "_")); got != sb || !strings.HasPrefix(got, "ok ") {
		t.Fatalf("team-b (may observe b/*) stats: %s", got)
	}
	if strings.Contains(sb, "a/held") || !strings.Contains(sb, `"b/held"`) || !strings.Contains(sb, `"b/count"`) {
		t.Fatalf("team-b's stats: %s", sb)
	}
	so := fs.traffic(op, request("stats", "_", "_"))
	if !strings.Contains(so, "a/held") || !strings.Contains(so, "b/held") {
		t.Fatalf("ops' stats: %s", so)
	}
	// team-a with observe removed: stats refused.
	fs.hub.SetPolicy(mustPolicy(t, strings.Replace(teamsPolicy, "listen,observe a/*", "listen a/*", 1)))
	if got := fs.traffic(a, request("stats", "_", "_")); got != "error_denied\n" {
		t.Fatalf("stats without observe: %q", got)
	}
}

// A reload: a connection whose identity lost a permission is refused on
// its next request, its held lock stays held; an identity removed may do
// nothing; no connection is closed.
func TestPolicyReload(t *testing.T) {
	fs := aclFake(t, teamsPolicy, vocab.ProfileV2)
	a := fs.open()
	fs.traffic(a, request("auth", "_", "tok-a"))
	if got := fs.traffic(a, request("l", "a/held", "0 60")); !strings.HasPrefix(got, "ok ") {
		t.Fatal(got)
	}
	fs.hub.SetPolicy(mustPolicy(t, strings.Replace(teamsPolicy, "allow lock,read,write", "allow read,write", 1)))
	if got := fs.traffic(a, request("l", "a/other", "0 60")); got != "error_denied\n" {
		t.Fatalf("lock after the reload took lock away: %q", got)
	}
	if got := fs.traffic(a, request("incr", "a/n", "1")); got != "ok 1\n" {
		t.Fatalf("write, still allowed: %q", got)
	}
	if st := fs.eng.LockStats(fs.clock.Now(), 0); len(st.Locks) != 1 || st.Locks[0].Key != "a/held" {
		t.Fatalf("the lock held before the reload: %+v", st.Locks)
	}
	fs.hub.SetPolicy(mustPolicy(t, "identity team-b\n token %B\n allow * b/*\n"))
	if got := fs.traffic(a, request("incr", "a/n", "1")); got != "error_denied\n" {
		t.Fatalf("an identity the policy no longer has: %q", got)
	}
	if a.closed {
		t.Fatal("a reload closed a connection")
	}
}

// The conns quota: past it, a connection's auth closes it, and the
// identity's counter rises; a closed connection gives its place back.
func TestPolicyConnsQuota(t *testing.T) {
	fs := aclFake(t, teamsPolicy, vocab.ProfileV2)
	c1, c2, c3 := fs.open(), fs.open(), fs.open()
	for _, c := range []*fakeConn{c1, c2} {
		if got := fs.traffic(c, request("auth", "_", "tok-a")); got != "ok\n" {
			t.Fatal(got)
		}
	}
	if got := fs.traffic(c3, request("auth", "_", "tok-a")); got != "" {
		t.Fatalf("third connection of a conns=2 identity answered %q", got)
	}
	// Closed by the auth itself, with no timer run: a refusal costs
	// the loop no second turn.
	if !c3.closed {
		t.Fatal("the third connection is still open after its auth")
	}
	var u *Usage
	for _, x := range fs.hub.Usages() {
		if x.Name == "team-a" {
			u = x
		}
	}
	if u == nil || u.Conns.Load() != 2 || u.QuotaExceeded[QuotaConns].Load() != 1 {
		t.Fatalf("usage %+v", u)
	}
	fs.closeConn(c1)
	c4 := fs.open()
	if got := fs.traffic(c4, request("auth", "_", "tok-a")); got != "ok\n" {
		t.Fatalf("after a close, a new connection: %q", got)
	}
}

// The rate quota paces: requests past the identity's burst (50 ms worth
// of its rate) wait, unread, until its bucket refills, then are all
// answered in order; none is refused.
func TestPolicyRatePaces(t *testing.T) {
	fs := aclFake(t, "identity r\n token %A\n allow * *\n quota rate=200\n", vocab.ProfileV2)
	c := fs.open()
	c.pausable = true
	fs.traffic(c, request("auth", "_", "tok-a"))
	var in strings.Builder
	for range 25 {
		in.WriteString(request("incr", "n", "1"))
	}
	got := fs.traffic(c, in.String())
	checkPaced(t, fs, c, got, 26, "ok 25") // the auth's ok and 25 replies
}

// checkPaced checks a connection sent 25 requests at rate=200: got, the
// replies at once, is the burst of 10, and reading is paused; then, as
// time passes, all of them are answered (c.out holds want lines, the
// last one last), and the connection stays open.
func checkPaced(t *testing.T, fs *fakeServer, c *fakeConn, got string, want int, last string) {
	t.Helper()
	if n := strings.Count(got, "\n"); n != 10 {
		t.Fatalf("answered %d of 25 at once, want the burst of 10 (50 ms at 200 a second): %q", n, got)
	}
	if !c.readPaused {
		t.Fatal("reading not paused while paced")
	}
	for range 50 {
		if strings.Count(string(c.out), "\n") == want {
			break
		}
		fs.runTimers(100 * time.Millisecond)
	}
	replies := strings.Split(strings.TrimSuffix(string(c.out), "\n"), "\n")
	if len(replies) != want || replies[want-1] != last {
		t.Fatalf("after pacing: %d replies, last %q", len(replies), replies[len(replies)-1])
	}
	if c.closed {
		t.Fatal("pacing closed the connection")
	}
}

// An identity's paced connections wait in line: each is woken at its own
// turn, in the order they were paced, not all at once to contend for the
// one request the rate allows then (the one woken first winning it).
func TestPolicyRatePacedConnectionsWaitInLine(t *testing.T) {
	fs := aclFake(t, "identity r\n token %A\n allow * *\n quota rate=20\n", vocab.ProfileV2) // one per 50 ms
	a, b := fs.open(), fs.open()
	for _, c := range []*fakeConn{a, b} {
		c.pausable = true
		if got := fs.traffic(c, request("auth", "_", "tok-a")); got != "ok\n" {
			t.Fatal(got)
		}
	}
	if got := fs.traffic(a, request("incr", "n", "1")); got != "ok 1\n" {
		t.Fatalf("a's first: %q", got)
	}
	if got := fs.traffic(b, request("incr", "n", "1")); got != "" {
		t.Fatalf("b, past the rate: %q, want it paced", got)
	}
	if got := fs.traffic(a, request("incr", "n", "1")); got != "" {
		t.Fatalf("a's second, past the rate: %q, want it paced", got)
	}
	aMark, bMark, aWakes := len(a.out), len(b.out), a.wakes
	fs.runTimers(50 * time.Millisecond)
	if got := string(b.out[bMark:]); got != "ok 2\n" {
		t.Fatalf("50 ms on, b (paced first): %q, want its turn", got)
	}
	if got := string(a.out[aMark:]); got != "" || a.wakes != aWakes {
		t.Fatalf("50 ms on, a (paced second): %q, %d wakes: want it still waiting, not woken", got, a.wakes-aWakes)
	}
	fs.runTimers(50 * time.Millisecond)
	if got := string(a.out[aMark:]); got != "ok 3\n" {
		t.Fatalf("100 ms on, a: %q, want its turn", got)
	}
}

// A paced connection with more input than its turn stays unread from the
// pause to the end of what waited: it is not resumed at each turn only to
// be paused again at the next request (two epoll_ctl calls a turn).
func TestPolicyRatePacedReadingResumesOnce(t *testing.T) {
	fs := aclFake(t, "identity r\n token %A\n allow * *\n quota rate=200\n", vocab.ProfileV2) // burst 10, then one per 5 ms
	c := fs.open()
	c.pausable = true
	fs.traffic(c, request("auth", "_", "tok-a"))
	fs.traffic(c, strings.Repeat(request("incr", "n", "1"), 25))
	if !c.readPaused {
		t.Fatal("reading not paused while paced")
	}
	for i := 0; strings.Count(string(c.out), "\n") < 26; i++ { // the auth's ok and 25 replies
		if i == 100 {
			t.Fatalf("not all answered: %q", c.out)
		}
		if !c.readPaused || c.resumes != 0 {
			t.Fatalf("with %d replies: reading paused %v, resumed %d times; want paused until all are answered",
				strings.Count(string(c.out), "\n")-1, c.readPaused, c.resumes)
		}
		fs.runTimers(5 * time.Millisecond)
	}
	if c.readPaused || c.resumes != 1 {
		t.Fatalf("all answered: reading paused %v, resumed %d times; want resumed once", c.readPaused, c.resumes)
	}
}

// A paced connection whose replies wait unsent is resumed at each turn,
// as before: the transport reads again by itself once its output drains,
// so reading cannot be left paused across turns.
func TestPolicyRatePacedWithOutputWaitingResumesEachTurn(t *testing.T) {
	fs := aclFake(t, "identity r\n token %A\n allow * *\n quota rate=200\n", vocab.ProfileV2)
	c := fs.open()
	c.pausable = true
	fs.traffic(c, request("auth", "_", "tok-a"))
	c.stalled = true
	fs.traffic(c, strings.Repeat(request("incr", "n", "1"), 25))
	if !c.readPaused || c.Unsent() == 0 {
		t.Fatalf("paused %v, %d bytes unsent: want paced with its replies waiting", c.readPaused, c.Unsent())
	}
	for i := 0; i < 20 && c.resumes == 0; i++ {
		fs.runTimers(time.Millisecond)
	}
	if c.resumes != 1 || !c.readPaused {
		t.Fatalf("after a turn: resumed %d times, paused %v; want resumed at the turn, paused again", c.resumes, c.readPaused)
	}
}

// A paced connection takes the turns of up to 10 ms worth of the requests
// it has buffered at once, and is woken once for them, when the last is
// due: at 2,000 a second, runs of 20 every 10 ms, not one or two at every
// millisecond.
func TestPolicyRatePacesInBatches(t *testing.T) {
	fs := aclFake(t, "identity r\n token %A\n allow * *\n quota rate=2000\n", vocab.ProfileV2) // burst 100
	c := fs.open()
	c.pausable = true
	fs.traffic(c, request("auth", "_", "tok-a"))
	got := fs.traffic(c, strings.Repeat(request("incr", "n", "1"), 150))
	if n := strings.Count(got, "\n"); n != 100 {
		t.Fatalf("answered %d at once, want the burst of 100", n)
	}
	for run := range 2 {
		mark, wakes := len(c.out), c.wakes
		fs.runTimers(9 * time.Millisecond)
		if n := strings.Count(string(c.out[mark:]), "\n"); n != 0 || c.wakes != wakes {
			t.Fatalf("run %d: %d answered, %d wakes 9 ms on: want none before the batch's last turn", run, n, c.wakes-wakes)
		}
		fs.runTimers(time.Millisecond)
		if n := strings.Count(string(c.out[mark:]), "\n"); n != 20 || c.wakes != wakes+1 {
			t.Fatalf("run %d: %d answered, %d wakes 10 ms on: want the batch of 20 at one wake", run, n, c.wakes-wakes)
		}
	}
	fs.runTimers(10 * time.Millisecond)
	if n := strings.Count(string(c.out), "\n"); n != 151 {
		t.Fatalf("%d replies, want the auth's and 150", n)
	}
}

// A rate slower than one request per 50 ms has a burst of one request.
func TestPolicyRateBurstOfOne(t *testing.T) {
	fs := aclFake(t, "identity r\n token %A\n allow * *\n quota rate=10\n", vocab.ProfileV2)
	c := fs.open()
	c.pausable = true
	fs.traffic(c, request("auth", "_", "tok-a"))
	if got := fs.traffic(c, strings.Repeat(request("incr", "n", "1"), 3)); got != "ok 1\n" {
		t.Fatalf("at once: %q, want one reply", got)
	}
	fs.runTimers(100 * time.Millisecond)
	if got := string(c.out); !strings.HasSuffix(got, "ok 1\nok 2\n") {
		t.Fatalf("100 ms later: %q, want the second reply", got)
	}
}

// The engine-side quotas of an identity, summed over its connections:
// claims (held or queued), waiters and keys. Past one, the limit reply
// dflockd clients know (error_max_locks, error_max_waiters,
// error_max_keys); a lease that ends, a release or a disconnect gives the
// room back; another identity is not affected.
func TestPolicyEngineQuotas(t *testing.T) {
	fs := aclFake(t, `identity noisy
  token %A
  allow * *
  quota locks=3 waiters=1 keys=2
identity quiet
  token %B
  allow * *
`, vocab.ProfileV2)
	n1, n2, q := fs.open(), fs.open(), fs.open()
	for c, tok := range map[*fakeConn]string{n1: "tok-a", n2: "tok-a", q: "tok-b"} {
		if got := fs.traffic(c, request("auth", "_", tok)); got != "ok\n" {
			t.Fatal(got)
		}
	}
	// Three holds across two connections fill locks=3.
	fs.traffic(n1, request("l", "k1", "0 1"))
	fs.traffic(n1, request("l", "k2", "0 60"))
	if got := fs.traffic(n2, request("l", "k3", "0 60")); !strings.HasPrefix(got, "ok ") {
		t.Fatal(got)
	}
	if got := fs.traffic(n2, request("l", "k4", "0 60")); got != "error_max_locks\n" {
		t.Fatalf("fourth claim: %q", got)
	}
	if got := fs.traffic(q, request("l", "k4", "0 60")); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("the quiet identity: %q", got)
	}
	// k1's lease ends: its room comes back.
	fs.runTimers(1100 * time.Millisecond)
	if got := fs.traffic(n2, request("l", "k5", "0 60")); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("after a lease ended: %q", got)
	}
	// A disconnect gives n1's k2 back; one waiter at most.
	fs.closeConn(n1)
	if got := fs.traffic(n2, request("e", "k4", "60")); got != "queued\n" {
		t.Fatalf("enqueue behind the quiet identity: %q", got)
	}
	n3 := fs.open()
	fs.traffic(n3, request("auth", "_", "tok-a"))
	if got := fs.traffic(n3, request("l", "k4", "5 60")); got != "error_max_locks\n" {
		// claims: k3, k5 held and k4 queued = 3
		t.Fatalf("a claim past locks=3 while one waits: %q", got)
	}
	// keys=2: two counters, then the third is refused; the quiet one's are
	// its own.
	fs.traffic(n3, request("incr", "c1", "1"))
	fs.traffic(n3, request("kset", "c2", "v"))
	if got := fs.traffic(n3, request("rpush", "c3", "v")); got != "error_max_keys\n" {
		t.Fatalf("third key: %q", got)
	}
	if got := fs.traffic(q, request("rpush", "c3", "v")); got != "ok 1\n" {
		t.Fatalf("the quiet identity's key: %q", got)
	}
	fs.traffic(n3, request("kdel", "c2", "_"))
	if got := fs.traffic(n3, request("rpush", "c4", "v")); got != "ok 1\n" {
		t.Fatalf("after a kdel gave a key back: %q", got)
	}
	var u *Usage
	for _, x := range fs.hub.Usages() {
		if x.Name == "noisy" {
			u = x
		}
	}
	claims, waiting, keys := fs.hub.eng.LookupTenant("noisy").Usage()
	if claims != 3 || waiting != 1 || keys != 2 {
		t.Fatalf("noisy's usage: claims %d waiting %d keys %d", claims, waiting, keys)
	}
	if l, k := fs.hub.QuotaExceeded(u, QuotaLocks), fs.hub.QuotaExceeded(u, QuotaKeys); l != 2 || k != 1 {
		t.Fatalf("refusals counted: %d claims, %d keys", l, k)
	}
	// A reload raises the quota: the refused claim now queues.
	fs.hub.SetPolicy(mustPolicy(t, "identity noisy\n token %A\n allow * *\n quota locks=10 waiters=5\n"))
	if got := fs.traffic(n3, request("e", "k4", "60")); got != "queued\n" {
		t.Fatalf("after the quota was raised: %q", got)
	}
	fs.hub.SetPolicy(mustPolicy(t, "identity noisy\n token %A\n allow * *\n quota locks=10 waiters=2\n"))
	if got := fs.traffic(n3, request("l", "k4", "5 60")); got != "error_max_waiters\n" {
		t.Fatalf("a third waiter past waiters=2: %q", got)
	}
	if got := fs.traffic(n3, request("l", "k4", "0 60")); got != "timeout\n" {
		t.Fatalf("a try-lock does not wait, so waiters=2 does not refuse it: %q", got)
	}
}

// hundredRules is a policy whose identity (token "tok-a") has 100 rules,
// the one that allows the keys that start with allowed among them.
func hundredRules(t testing.TB, allowed string) *policy.Policy {
	var b strings.Builder
	b.WriteString("identity a\n token %A\n allow lock " + allowed + "*\n")
	for i := range 99 {
		fmt.Fprintf(&b, " allow lock,read team-%d/*\n", i)
	}
	return mustPolicy(t, b.String())
}

// A godistlock connection, identified by its client certificate, is held
// to its identity's locks quota as a line connection is: past it a TRY
// gets NO on a free key, and its own hold's renewal still gets GIVE.
func TestPolicyGodistlockQuota(t *testing.T) {
	fs := aclFake(t, "identity q\n token %A\n cert q.clients\n allow * q/*\n quota locks=1\n", vocab.ProfileV2)
	c := fs.openCertified("q.clients")
	if got := fs.traffic(c, "TRY q/1 30000 n1\n"); !strings.HasPrefix(got, "GIVE n1 ") {
		t.Fatalf("TRY q/1 within locks=1: %q", got)
	}
	if got := fs.traffic(c, "TRY q/2 30000 n2\n"); got != "NO n2\n" {
		t.Fatalf("TRY q/2 past locks=1: %q, want NO", got)
	}
	if got := fs.traffic(c, "TRY q/1 30000 n3\n"); !strings.HasPrefix(got, "GIVE n3 ") {
		t.Fatalf("TRY q/1 again (its own hold, renewed): %q", got)
	}
}

// The rate quota paces a godistlock connection as it does a line one: a
// request is one line there, the burst (10 at rate=200) is answered at
// once, reading pauses, and the rest are answered in order as the rate
// allows, none refused.
func TestPolicyRatePacesGodistlock(t *testing.T) {
	fs := aclFake(t, "identity r\n token %A\n cert r.clients\n allow * *\n quota rate=200\n", vocab.ProfileV2)
	c := fs.openCertified("r.clients")
	c.pausable = true
	var in strings.Builder
	for i := range 25 {
		fmt.Fprintf(&in, "IS k n%d\n", i)
	}
	got := fs.traffic(c, in.String())
	checkPaced(t, fs, c, got, 25, "NO n24")
}

// The conns quota counts an identity's connections whichever way they
// name it: a godistlock connection by its client certificate, a line
// connection by its token. Past it, a certified connection is closed as
// it opens, a token's at its auth; a close gives the place back.
func TestPolicyConnsQuotaByCertificate(t *testing.T) {
	fs := aclFake(t, "identity q\n token %A\n cert q.clients\n allow * q/*\n quota conns=1\n", vocab.ProfileV2)
	c1 := fs.openCertified("q.clients")
	if got := fs.traffic(c1, "TRY q/1 30000 n1\n"); !strings.HasPrefix(got, "GIVE n1 ") {
		t.Fatalf("the first certified connection: TRY %q", got)
	}
	c2 := fs.openCertified("q.clients")
	fs.runTimers(time.Millisecond)
	if !c2.closed {
		t.Fatal("a second certified connection past conns=1 is open")
	}
	c3 := fs.open()
	if got := fs.traffic(c3, request("auth", "_", "tok-a")); got != "" || !c3.closed {
		t.Fatalf("a token's connection past conns=1: answered %q, closed %v", got, c3.closed)
	}
	fs.closeConn(c1)
	c4 := fs.openCertified("q.clients")
	if got := fs.traffic(c4, "TRY q/2 30000 n2\n"); !strings.HasPrefix(got, "GIVE n2 ") || c4.closed {
		t.Fatalf("after a close, a certified connection: TRY %q, closed %v", got, c4.closed)
	}
}
