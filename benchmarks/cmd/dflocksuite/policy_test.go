package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/benchmarks/noisy"
	"github.com/dflockd-ng/dflockd/benchmarks/suite"
	"github.com/dflockd-ng/dflockd/policy"
)

// The generated policy parses; identity i allows lock on exactly the keys
// connection i of the load generator uses, every identity has its rules,
// and the decoys deny and allow what they say without touching them.
func TestPolicyFileDecides(t *testing.T) {
	tokens := []string{"tok-0", "tok-1", "tok-2"}
	src := policyFile(tokens, 100, policyKeyPrefix)
	p, err := policy.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(p.Identities()); n != 3 {
		t.Fatalf("%d identities", n)
	}
	if rules := bytes.Count(src, []byte("\n  allow ")) + bytes.Count(src, []byte("\n  deny ")); rules != 300 {
		t.Fatalf("%d rules, want 100 per identity", rules)
	}
	for i, tok := range tokens {
		id := p.ByToken([]byte(tok))
		if id == nil || id.Name != fmt.Sprintf("tenant-%04d", i) {
			t.Fatalf("token %d: %+v", i, id)
		}
		for slot := 0; slot < 64; slot++ {
			key := fmt.Sprintf("%s.c%d.s%d", policyKeyPrefix, i, slot)
			if !id.Allows(policy.Lock, []byte(key)) {
				t.Errorf("%s: lock on its own %s refused", id.Name, key)
			}
			other := fmt.Sprintf("%s.c%d.s%d", policyKeyPrefix, (i+1)%3, slot)
			if id.Allows(policy.Lock, []byte(other)) {
				t.Errorf("%s: lock on another's %s allowed", id.Name, other)
			}
		}
		for _, c := range []struct {
			cl   policy.Class
			key  string
			want bool
		}{
			{policy.Write, fmt.Sprintf("%s.c%d.s3.frozen/x", policyKeyPrefix, i), false},
			{policy.Write, fmt.Sprintf("%s.c%d.s3", policyKeyPrefix, i), false}, // nothing allows write there
			{policy.Read, fmt.Sprintf("%s.c%d.kv5", policyKeyPrefix, i), true},
			{policy.Read, fmt.Sprintf("%s.c%d.kv5x", policyKeyPrefix, i), false},
			{policy.Write, fmt.Sprintf("app7/tenant-%04d/job", i), true},
			{policy.Lock, "app7/tenant-9999/job", false},
		} {
			if got := id.Allows(c.cl, []byte(c.key)); got != c.want {
				t.Errorf("%s: %v on %s = %v, want %v", id.Name, c.cl, c.key, got, c.want)
			}
		}
	}
	// The defaults' many-identities file is within a policy file's bounds.
	s := &runner{policyConns: 50, policyDepth: 16, policyRules: 100, policyMany: 500}
	if err := s.checkPolicyFlags(); err != nil {
		t.Fatal(err)
	}
	many, err := randomTokens(s.policyMany)
	if err != nil {
		t.Fatal(err)
	}
	big := policyFile(many, s.policyRules, policyKeyPrefix)
	if _, err := policy.Parse(big); err != nil || len(big) > policy.MaxFileSize {
		t.Fatalf("%d identities × %d rules (%d bytes): %v", s.policyMany, s.policyRules, len(big), err)
	}
}

func TestPolicyFlags(t *testing.T) {
	for _, c := range []struct {
		conns, depth, rules, many int
		want                      string
	}{
		{0, 16, 100, 0, "--policy-conns"},
		{50, 0, 100, 0, "--policy-depth"},
		{50, 16, 0, 0, "--policy-rules"},
		{2000, 16, 100, 0, "--policy-rules"}, // 200,000 rules
		{50, 16, 100, 50, "--policy-identities"},
		{50, 16, 100, 1001, "--policy-identities"},
	} {
		s := &runner{policyConns: c.conns, policyDepth: c.depth, policyRules: c.rules, policyMany: c.many}
		if err := s.checkPolicyFlags(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c, err, c.want)
		}
	}
	if err := (&runner{policyConns: 50, policyDepth: 16, policyRules: 100}).checkPolicyFlags(); err != nil {
		t.Errorf("no many-identities server: %v", err)
	}
	s := &runner{}
	if err := s.parseWorkloads("policy,noisy"); err != nil || !s.policy || !s.noisy || s.core() || len(s.jobs()) != 0 {
		t.Fatalf("policy,noisy: %v (policy %v, noisy %v, core %v)", err, s.policy, s.noisy, s.core())
	}
	if err := (&runner{}).parseWorkloads("scaling,policy"); err == nil {
		t.Fatal("scaling with policy accepted")
	}
}

// lockFake is a dflockd stand-in: it grants and releases any key, and
// answers auth ok only for the given tokens (none: every auth is an
// error, as dflockd without a token or policy answers).
func lockFake(t *testing.T, tokens ...string) *fakeMember {
	t.Helper()
	var n atomic.Int64
	return newFakeMember(t, func(cmd, key, arg string) string {
		switch cmd {
		case "auth":
			if slices.Contains(tokens, arg) {
				return "ok"
			}
			return "error"
		case "l":
			return fmt.Sprintf("ok %032x %s", n.Add(1), strings.Fields(arg)[1])
		case "r", "ping":
			return "ok"
		}
		return "error"
	})
}

// The rounds run every server once, the first rotating; the connections
// of a policy server authenticate first, each with its own identity's
// token, those of the server without a policy never do.
func TestPolicyRoundsAgainstFakes(t *testing.T) {
	tokens := []string{"t0", "t1", "t2", "t3"}
	none, own := lockFake(t), lockFake(t, tokens...)
	ts := []*target{
		{name: policyNone, addr: none.addr, kind: "line", keyPrefix: policyKeyPrefix},
		{name: policyOwn, addr: own.addr, kind: "line", keyPrefix: policyKeyPrefix, tokens: tokens},
	}
	var stderr bytes.Buffer
	s := &runner{stderr: &stderr, reps: 3, warmup: 30 * time.Millisecond, duration: 150 * time.Millisecond}
	recs, err := s.runJobs(context.Background(), policyJobs(ts, 3, 4, 2), nil)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range recs {
		order = append(order, fmt.Sprintf("%d:%s", r.Rep, r.Target))
	}
	if want := []string{"1:no-policy", "1:policy", "2:policy", "2:no-policy", "3:no-policy", "3:policy"}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	var auths []string
	for _, r := range own.requests() {
		if strings.HasPrefix(r, "auth ") {
			auths = append(auths, r)
		} else if !strings.HasPrefix(r, "l "+policyKeyPrefix+".c") && !strings.HasPrefix(r, "r "+policyKeyPrefix+".c") {
			t.Fatalf("policy server saw %q", r)
		}
	}
	if len(auths) != 3*4 {
		t.Fatalf("%d auths, want one per connection of each round: %v", len(auths), auths)
	}
	for i, a := range auths {
		if want := "auth _ " + tokens[i%4]; a != want {
			t.Fatalf("auth %d %q, want %q", i, a, want)
		}
	}
	for _, r := range none.requests() {
		if strings.HasPrefix(r, "auth") {
			t.Fatalf("the server without a policy got %q", r)
		}
	}
}

// fakePolicyResult is three rounds of the three servers, the policy one
// at +2 % CPU per pair and the many one at +5 %.
func fakePolicyResult() *policyResult {
	r := &policyResult{Conns: 50, Depth: 16, Servers: []policyServer{
		{Name: policyNone, IdleRSS: 15 << 20},
		{Name: policyOwn, Identities: 50, Rules: 100, FileBytes: 200 << 10, IdleRSS: 15<<20 + 512<<10},
		{Name: policyMany, Identities: 500, Rules: 100, FileBytes: 2 << 20, IdleRSS: 30 << 20},
	}, Notes: []string{"a note"}}
	names := []string{policyNone, policyOwn, policyMany}
	for round := 1; round <= 3; round++ {
		base := 2000 + 100*float64(round)
		for i := range names {
			name := names[(round-1+i)%3]
			cpu := map[string]float64{policyNone: base, policyOwn: base * 1.02, policyMany: base * 1.05}[name]
			r.Runs = append(r.Runs, suite.Record{Target: name, Workload: "lock", Conns: 50, Depth: 16, Rep: round,
				PairsPerS: 4e5 * 2000 / cpu, P99Ns: 3e6, CPUPerPairNs: cpu})
		}
	}
	return r
}

func TestPolicyMarkdown(t *testing.T) {
	r := fakePolicyResult()
	rep := &suite.Report{Title: "Policy cost (generated)", Command: "go run ./benchmarks/cmd/dflocksuite --workloads policy", Notes: r.Notes,
		RawPath: "benchmarks/results/policy-full.json"}
	md := string(r.markdown(rep))
	wantAll(t, "markdown", md,
		"## Policy cost (generated)",
		"- a note",
		"### lock+release, 50 connections × depth 16",
		"| no-policy | – | – | – | 15.00 MiB | 364k (348k–381k) | 3.00 ms | 2.20 µs |  |  |",
		"| policy | 50 | 100 | 200 KiB | 15.50 MiB | 357k (341k–373k) | 3.00 ms | 2.24 µs | 1.020× | 0.980× |",
		"| policy-many | 500 | 100 | 2048 KiB | 30.00 MiB |",
		"| 2 | policy | 2.20 µs | 2.24 µs | 1.020 | 2.31 µs | 1.050 |",
		"Target server CPU per pair with the policy ≤ 1.03× without: **1.020×** (median of 3 rounds' ratios, 1.020–1.020; met).",
		"Target idle RSS with the policy within 1 MiB of without: **+512 KiB** (15.50 MiB vs 15.00 MiB; met).",
		"Raw results: [`benchmarks/results/policy-full.json`](benchmarks/results/policy-full.json)",
	)
	// Over both targets: not met.
	r.Servers[1].IdleRSS = 17 << 20
	for i := range r.Runs {
		if r.Runs[i].Target == policyOwn {
			r.Runs[i].CPUPerPairNs *= 1.05
		}
	}
	v := strings.Join(r.verdicts(), " ")
	if !strings.Contains(v, "**1.071×**") || strings.Count(v, "not met") != 2 || !strings.Contains(v, "**+2048 KiB**") {
		t.Errorf("verdicts %q", v)
	}
}

// stubNoisy is a noisy tenant that does nothing and reports counts.
type stubNoisy struct {
	err     error
	stopped *int
}

func (n stubNoisy) Stop() (noisy.Counts, error) {
	*n.stopped++
	return noisy.Counts{Requests: 100, MaxLocks: 10, MaxWaiters: 5, MaxKeys: 7, Dials: 3, ConnsClosed: 3}, n.err
}

// The quiet tenant runs alone and beside the noisy one, which goes first
// alternating; the noisy tenant runs only for the beside runs, and its
// failure fails the round.
func TestNoisyRoundsAgainstFake(t *testing.T) {
	quiet := lockFake(t, "q")
	base := target{addr: quiet.addr, kind: "line", tokens: []string{"q"}, keyPrefix: noisyKeyPrefix}
	alone, beside := base, base
	alone.name, beside.name = noisyAlone, noisyBeside
	var stderr bytes.Buffer
	s := &runner{stderr: &stderr, reps: 3, warmup: 30 * time.Millisecond, duration: 150 * time.Millisecond, noisyConns: 3, noisyDepth: 1}
	started, stopped := 0, 0
	start := func(_ context.Context, tg *target) (stopper, error) {
		if tg != &beside {
			t.Errorf("the noisy tenant started for %s", tg.name)
		}
		started++
		return stubNoisy{stopped: &stopped}, nil
	}
	runs, err := s.noisyRounds(context.Background(), []*target{&alone, &beside}, start)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range runs {
		order = append(order, fmt.Sprintf("%d:%s", r.Rep, r.Target))
		if (r.Target == noisyBeside) != (r.Noisy != nil) {
			t.Errorf("run %+v: noisy counts on the wrong runs", r)
		}
	}
	if want := []string{"1:quiet-alone", "1:quiet-beside-noisy", "2:quiet-beside-noisy", "2:quiet-alone", "3:quiet-alone", "3:quiet-beside-noisy"}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	if started != 3 || stopped != 3 {
		t.Fatalf("noisy tenant started %d, stopped %d times, want 3", started, stopped)
	}
	for _, r := range quiet.requests() {
		if !strings.HasPrefix(r, "auth _ q") && !strings.Contains(r, " "+noisyKeyPrefix+".c") {
			t.Fatalf("quiet server saw %q", r)
		}
	}
	// With the control, three phases rotate; the noisy tenant runs
	// for both of the phases beside it, told which.
	sinked := base
	sinked.name = noisyControl
	var startedFor []string
	start = func(_ context.Context, tg *target) (stopper, error) {
		startedFor = append(startedFor, tg.name)
		return stubNoisy{stopped: &stopped}, nil
	}
	runs, err = s.noisyRounds(context.Background(), []*target{&alone, &beside, &sinked}, start)
	if err != nil {
		t.Fatal(err)
	}
	order = order[:0]
	for _, r := range runs {
		order = append(order, fmt.Sprintf("%d:%s", r.Rep, r.Target))
		if (r.Target != noisyAlone) != (r.Noisy != nil) {
			t.Errorf("run %+v: noisy counts on the wrong runs", r)
		}
	}
	if want := []string{"1:quiet-alone", "1:quiet-beside-noisy", "1:quiet-beside-noisy-sink",
		"2:quiet-beside-noisy", "2:quiet-beside-noisy-sink", "2:quiet-alone",
		"3:quiet-beside-noisy-sink", "3:quiet-alone", "3:quiet-beside-noisy"}; !slices.Equal(order, want) {
		t.Fatalf("order with the control %v, want %v", order, want)
	}
	if want := []string{noisyBeside, noisyControl, noisyBeside, noisyControl, noisyControl, noisyBeside}; !slices.Equal(startedFor, want) {
		t.Fatalf("noisy tenant started for %v, want %v", startedFor, want)
	}
	start = func(context.Context, *target) (stopper, error) {
		return stubNoisy{err: errors.New("boom"), stopped: &stopped}, nil
	}
	s.reps = 1
	if _, err := s.noisyRounds(context.Background(), []*target{&alone, &beside}, start); err == nil || !strings.Contains(err.Error(), "noisy tenant: boom") {
		t.Fatalf("a failing noisy tenant: %v", err)
	}
}

func TestNoisyMarkdown(t *testing.T) {
	r := &noisyResult{Conns: 10, Depth: 1, Quota: noisyQuota, Rate: 2000, DialRate: 100, Notes: []string{"a note"}}
	c := &noisy.Counts{Requests: 5000, MaxLocks: 900, MaxWaiters: 300, MaxKeys: 400, Dials: 80, ConnsClosed: 80}
	for round := 1; round <= 2; round++ {
		a := noisyRun{Record: suite.Record{Target: noisyAlone, Workload: "lock", Conns: 10, Depth: 1, Rep: round, PairsPerS: 20000, P50Ns: 100e3, P99Ns: 2e6, Cores: 0.5, CPUPerPairNs: 25e3}}
		b := noisyRun{Record: suite.Record{Target: noisyBeside, Workload: "lock", Conns: 10, Depth: 1, Rep: round, PairsPerS: 19000, P50Ns: 100e3, P99Ns: 2.1e6, Cores: 0.55, CPUPerPairNs: 0.55 / 19000 * 1e9}, Noisy: c, NoisyCores: 0.04}
		if round == 2 {
			a, b = b, a
		}
		r.Runs = append(r.Runs, a, b)
	}
	md := string(r.markdown(&suite.Report{Title: "Noisy neighbour (generated)", Notes: r.Notes, RawPath: "benchmarks/results/noisy-full.json"}))
	wantAll(t, "markdown", md,
		"## Noisy neighbour (generated)",
		"### The quiet tenant: lock+release, 10 connections × depth 1",
		"| quiet-alone | 20.0k (20.0k–20.0k) | 100 µs | 2.00 ms | 0.50 | 25.0 µs |",
		"| quiet-beside-noisy | 19.0k (19.0k–19.0k) | 100 µs | 2.10 ms | 0.55 | 28.9 µs |",
		"| 2 | quiet-beside-noisy | 20.0k | 19.0k | 0.950 | 2.00 ms | 2.10 ms | 1.050 | 5000 | 900 | 300 | 400 | 80 of 80 | 0.04 |",
		"pairs/s **0.950×** (0.950–0.950), p99 **1.050×** (1.050–1.050), medians of 2 rounds' ratios (met).",
	)
	for i := range r.Runs {
		if r.Runs[i].Target == noisyBeside {
			r.Runs[i].P99Ns = 3e6
		}
	}
	if v := r.verdict(); !strings.Contains(v, "p99 **1.500×**") || !strings.HasSuffix(v, "(not met).") {
		t.Errorf("verdict %q", v)
	}
	// The control: its row, its round-by-round table and its ratios
	// (sink ÷ alone, beside ÷ sink) in the verdict.
	r.Control = true
	var runs []noisyRun
	for i, run := range r.Runs {
		runs = append(runs, run)
		if i%2 == 1 { // the round's last run so far: the control after it
			runs = append(runs, noisyRun{Record: suite.Record{Target: noisyControl, Workload: "lock", Conns: 10, Depth: 1, Rep: run.Rep,
				PairsPerS: 19500, P50Ns: 100e3, P99Ns: 2.5e6, Cores: 0.5, CPUPerPairNs: 25e3}, Noisy: c, NoisyCores: 0.05})
		}
	}
	r.Runs = runs
	md = string(r.markdown(&suite.Report{Title: "Noisy neighbour (generated)"}))
	wantAll(t, "markdown with the control", md,
		"| quiet-beside-noisy-sink | 19.5k (19.5k–19.5k) | 100 µs | 2.50 ms | 0.50 | 25.0 µs |",
		"| round | alone | beside the noisy tenant | beside it, dials to a sink | sink ÷ alone | beside ÷ sink |",
		"| 1 | 2.00 ms | 3.00 ms | 2.50 ms | 1.250 | 1.200 |",
		"÷ alone, **1.250×** (1.250–1.250)",
		"Beside it against the server ÷ the control, **1.200×** (1.200–1.200): the server's part.",
	)
}

// The noisy-tenant subcommand refuses bad arguments and a server it
// cannot reach.
func TestNoisySubcommandFails(t *testing.T) {
	var out bytes.Buffer
	if rc := noisyMain([]string{"--nope"}, strings.NewReader(""), &out); rc != 2 {
		t.Errorf("bad flag: exit %d", rc)
	}
	if rc := noisyMain([]string{"--addr", "127.0.0.1:1", "--token", "x", "--locks", "10", "--waiters", "2", "--keys", "3", "--conns", "5"},
		strings.NewReader(""), &out); rc != 1 || out.Len() != 0 {
		t.Errorf("unreachable server: exit %d, output %q", rc, out.String())
	}
}

// The dial-sink subcommand prints its address, closes each connection at
// its auth with no reply, and counts them when its standard input
// closes.
func TestDialSinkSubcommand(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() { done <- sinkMain(inR, outW); _ = outW.Close() }()
	rd := bufio.NewReader(outR)
	line, err := rd.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		t.Fatalf("first line %q, %v", line, err)
	}
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte("auth\n_\nsecret\n")); err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(c); err != nil || len(b) != 0 {
			t.Fatalf("the sink answered %q, %v: want a close with no reply", b, err)
		}
		_ = c.Close()
	}
	_ = inW.Close()
	if line, _ = rd.ReadString('\n'); line != "accepted 2\n" {
		t.Fatalf("last line %q, want accepted 2", line)
	}
	if rc := <-done; rc != 0 {
		t.Fatalf("exit %d", rc)
	}
}

// wantAll fails the test for each of wants that text (a report, named
// what) lacks.
func wantAll(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, text)
		}
	}
}
