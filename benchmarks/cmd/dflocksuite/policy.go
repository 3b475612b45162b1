package main

// The policy workload (--workloads policy, issue #35 "Sharing one server
// between teams"): what a policy file costs every request. The same
// dflockd-ng binary runs three times, all pinned to the server CPUs and
// idle but for their turn: without a policy, with a policy of one
// identity per connection (each with --policy-rules rules: the one that
// allows the benchmark's keys and decoys around it, so that every
// request's check walks a trie of that size), and with the same rules for
// --policy-identities identities, of which the connections use the first.
// The lock+release workload (conns × depth, default 50 × 16) runs against
// each in turn, the order rotating every round; every connection of the
// policy servers authenticates as its own identity first. The report
// gives server CPU per pair, pairs/s, p99 and each server's idle RSS,
// and the ratios to the server without a policy, round by round.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dflockd-ng/dflockd/benchmarks/loadgen"
	"github.com/dflockd-ng/dflockd/benchmarks/suite"
	"github.com/dflockd-ng/dflockd/policy"
)

// policySection is the part of PERF.md the policy workload rewrites.
var policySection = suite.Section{Begin: "<!-- suite:policy:begin -->", End: "<!-- suite:policy:end -->"}

// The acceptance targets of issue #35.
const (
	goalPolicyCPU = 1.03    // server CPU per pair with a policy ≤ 1.03× without
	goalPolicyRSS = 1 << 20 // idle RSS with the policy within 1 MiB of without
)

// Target names and keys of the policy workload.
const (
	policyNone = "no-policy"
	policyOwn  = "policy"      // one identity per connection
	policyMany = "policy-many" // --policy-identities identities
	// policyNoneB is a second server without a policy: what two processes
	// of one binary differ by, the spread under every cross-process ratio.
	policyNoneB = "no-policy-b"
	// policyAdmin is the policy server's own process, its connections
	// authenticated with its --auth-token, whose identity has every
	// permission and skips the check: the policy's cost within one process.
	policyAdmin     = "policy-admin"
	policyKeyPrefix = "suite.policy"
)

// Bounds of the policy flags: those of a policy file (package policy).
const (
	maxPolicyRules = 100000 // allow and deny lines in one file
	maxIdentities  = 10000
)

// policyServer is one server of the workload, as the report describes it.
type policyServer struct {
	Name       string `json:"name"`
	Identities int    `json:"identities"`
	Rules      int    `json:"rules_per_identity"`
	FileBytes  int    `json:"policy_file_bytes"`
	IdleRSS    int64  `json:"idle_rss_bytes"`
	IdleAnon   int64  `json:"idle_rss_anon_bytes"`
}

// policyResult is the workload's outcome, as kept in the raw JSON.
type policyResult struct {
	Conns   int            `json:"conns"`
	Depth   int            `json:"depth"`
	Servers []policyServer `json:"servers"` // row order
	Notes   []string       `json:"notes"`
	Runs    []suite.Record `json:"runs"` // in the order run; Rep is the round
}

// policyFile is a policy of len(tokens) identities, tenant-0000 … , the
// i-th authenticated by tokens[i] and holding rules rules: one allowing
// lock on the keys the load generator's connection i uses
// (prefix.c<i>.*), and rules−1 decoys that leave that decision alone
// while making the trie realistic: other teams' prefixes beside the path
// (app<k>/…), denies of write below the keys (prefix.c<i>.s<k>.frozen/),
// and exact keys beside them (prefix.c<i>.kv<k>).
func policyFile(tokens []string, rules int, prefix string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# dflocksuite's policy workload: %d identities, %d rules each\n", len(tokens), rules)
	for i, tok := range tokens {
		fmt.Fprintf(&b, "identity tenant-%04d\n  token %s\n  allow lock %s.c%d.*\n", i, policy.TokenHash(tok), prefix, i)
		for k := 0; k < rules-1; k++ {
			switch k % 3 {
			case 0:
				fmt.Fprintf(&b, "  allow lock,read,write app%d/tenant-%04d/*\n", k/3, i)
			case 1:
				fmt.Fprintf(&b, "  deny write %s.c%d.s%d.frozen/*\n", prefix, i, k/3)
			default:
				fmt.Fprintf(&b, "  allow read %s.c%d.kv%d\n", prefix, i, k/3)
			}
		}
	}
	return b.Bytes()
}

// randomTokens returns n tokens of 32 random hex digits.
func randomTokens(n int) ([]string, error) {
	out := make([]string, n)
	for i := range out {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		out[i] = hex.EncodeToString(b[:])
	}
	return out, nil
}

// checkPolicyFlags validates the policy workload's flags.
func (s *runner) checkPolicyFlags() error {
	switch {
	case s.policyConns < 1 || s.policyConns > maxIdentities:
		return fmt.Errorf("--policy-conns %d out of [1, %d] (one identity each)", s.policyConns, maxIdentities)
	case s.policyDepth < 1 || s.policyDepth > 4096:
		return fmt.Errorf("--policy-depth %d out of [1, 4096]", s.policyDepth)
	case s.policyRules < 1 || s.policyConns*s.policyRules > maxPolicyRules:
		return fmt.Errorf("--policy-rules %d: want ≥ 1, and %d connections × rules ≤ %d (a policy file's bound)", s.policyRules, s.policyConns, maxPolicyRules)
	case s.policyMany != 0 && (s.policyMany <= s.policyConns || s.policyMany > maxIdentities || s.policyMany*s.policyRules > maxPolicyRules):
		return fmt.Errorf("--policy-identities %d: want 0 (none) or more than --policy-conns %d, at most %d, and × --policy-rules %d ≤ %d",
			s.policyMany, s.policyConns, maxIdentities, s.policyRules, maxPolicyRules)
	}
	return nil
}

// policyPhase starts the three servers, measures each one's idle RSS
// before any load, and runs the rounds.
func (s *runner) policyPhase(ctx context.Context) (*policyResult, error) {
	res := &policyResult{Conns: s.policyConns, Depth: s.policyDepth}
	idents := s.policyConns
	if s.policyMany > idents {
		idents = s.policyMany
	}
	tokens, err := randomTokens(idents)
	if err != nil {
		return nil, err
	}
	type variant struct {
		name       string
		identities int
	}
	vars := []variant{{policyNone, 0}, {policyNoneB, 0}, {policyOwn, s.policyConns}}
	if s.policyMany > 0 {
		vars = append(vars, variant{policyMany, s.policyMany})
	}
	admin, err := randomTokens(1)
	if err != nil {
		return nil, err
	}
	var ts []*target
	for _, v := range vars {
		var extra []string
		srv := policyServer{Name: v.name, Identities: v.identities}
		t := &target{name: v.name, kind: "line", keyPrefix: policyKeyPrefix}
		if v.identities > 0 {
			src := policyFile(tokens[:v.identities], s.policyRules, policyKeyPrefix)
			path := filepath.Join(s.tmp, v.name+".policy")
			if err := os.WriteFile(path, src, 0o600); err != nil {
				return nil, err
			}
			extra = []string{"--policy-file", path}
			if v.name == policyOwn {
				extra = append(extra, "--auth-token", admin[0])
			}
			srv.Rules, srv.FileBytes = s.policyRules, len(src)
			t.tokens = tokens[:s.policyConns]
		}
		p, err := s.startNGProbed(ctx, s.ngBin, authProbe(t.tokens), extra...)
		if err != nil {
			return nil, fmt.Errorf("dflockd-ng (%s): %w", v.name, err)
		}
		t.addr, t.pid = p.addr, p.pid
		m, err := suite.StableRSS(p.pid)
		if err != nil {
			return nil, fmt.Errorf("%s: idle RSS: %w", v.name, err)
		}
		srv.IdleRSS, srv.IdleAnon = m.RSS, m.RssAnon
		fmt.Fprintf(s.stderr, "dflocksuite: %s idle RSS %.2f MiB (anon %.2f MiB)\n", v.name, float64(m.RSS)/(1<<20), float64(m.RssAnon)/(1<<20))
		res.Servers = append(res.Servers, srv)
		ts = append(ts, t)
		if v.name == policyOwn {
			res.Servers = append(res.Servers, policyServer{Name: policyAdmin, Identities: srv.Identities, Rules: srv.Rules,
				FileBytes: srv.FileBytes, IdleRSS: srv.IdleRSS, IdleAnon: srv.IdleAnon})
			ts = append(ts, &target{name: policyAdmin, kind: "line", keyPrefix: policyKeyPrefix, addr: t.addr, pid: t.pid, tokens: admin})
		}
	}
	built := "built from this tree"
	if s.dflockdBin != "" {
		built = "prebuilt (`--dflockd-bin`)"
	}
	res.Notes = append(res.Notes,
		fmt.Sprintf("One dflockd-ng binary %s, started four times with `--loops %d --max-locks %d`: `%s` and `%s` without a policy (two processes of one binary: their ratio is the spread that separates processes, under every ratio across them); `%s` with `--policy-file` of %d identities, one per connection, and an `--auth-token`; `%s` with the same rules for %d identities, of which the connections use the first %d. `%s` is the `%s` process again, its connections authenticated with that `--auth-token`, whose identity has every permission and skips the check: `%s` over `%s` is the check's cost within one process. All started at the outset, pinned to CPU %s, idle but for their turn.",
			built, s.ngLoops, s.ngMaxLocks, policyNone, policyNoneB, policyOwn, s.policyConns, policyMany, s.policyMany, s.policyConns,
			policyAdmin, policyOwn, policyOwn, policyAdmin, orAll(s.serverCPUs)),
		fmt.Sprintf("Every identity has %d rules: `allow lock %s.c<i>.*` (its connection's keys) and %d decoys that leave that decision alone: other prefixes beside the path (`allow lock,read,write app<k>/tenant-<i>/*`), denies below the keys (`deny write %s.c<i>.s<k>.frozen/*`) and exact keys beside them (`allow read %s.c<i>.kv<k>`). Every connection of a policy server sends `auth _ <its identity's token>` first (before the warm-up); every `l` and `r` is then checked against its identity's trie.",
			s.policyRules, policyKeyPrefix, s.policyRules-1, policyKeyPrefix, policyKeyPrefix),
		fmt.Sprintf("The lock+release workload at %d connections × depth %d (one key per slot, never contended), the load generator (this suite) pinned to CPU %s. The servers take turns, the first of each round rotating; server CPU per pair from /proc over each window (10 ms resolution). Idle RSS: each server's VmRSS once stable, after its start and before any load.",
			s.policyConns, s.policyDepth, orAll(s.clientCPUs)))
	runs, err := s.runJobs(ctx, policyJobs(ts, s.reps, s.policyConns, s.policyDepth), nil)
	if err != nil {
		return nil, err
	}
	res.Runs = runs
	return res, nil
}

// policyJobs lists the rounds: every target once a round, the first
// rotating, so that none always runs first (or last) in a round.
func policyJobs(ts []*target, rounds, conns, depth int) []job {
	var out []job
	for r := 1; r <= rounds; r++ {
		for i := range ts {
			out = append(out, job{ts[(r-1+i)%len(ts)], loadgen.Lock, conns, depth, r})
		}
	}
	return out
}

// authProbe is the startup probe of a server whose connections must
// authenticate: auth with the first token, then ping; without tokens, a
// plain ping.
func authProbe(tokens []string) func(string) error {
	if len(tokens) == 0 {
		return probeLine
	}
	return func(addr string) error {
		got, err := probeReply(addr, "auth\n_\n"+tokens[0]+"\nping\n_\n_\n")
		if err == nil && got != "ok\n" {
			err = fmt.Errorf("auth answered %q, want \"ok\"", got)
		}
		return err
	}
}

// startNGProbed is startNG with a probe of its own.
func (s *runner) startNGProbed(ctx context.Context, bin string, probe func(string) error, extra ...string) (*proc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := strings.Cut(addr, ":")
	return s.startProc(ctx, "dflockd-ng", bin, append(s.ngArgs(port), extra...), addr, probe)
}

// policyRound is one round's server CPU per pair by target.
type policyRound struct {
	round int
	first string
	cpu   map[string]float64
	pairs map[string]float64
}

func (r *policyResult) rounds() []policyRound {
	var out []policyRound
	for _, run := range r.Runs {
		if len(out) == 0 || out[len(out)-1].round != run.Rep {
			out = append(out, policyRound{round: run.Rep, first: run.Target, cpu: map[string]float64{}, pairs: map[string]float64{}})
		}
		rd := &out[len(out)-1]
		rd.cpu[run.Target] = run.CPUPerPairNs
		rd.pairs[run.Target] = run.PairsPerS
	}
	return out
}

// ratios returns, round by round, name's figure over no-policy's.
func (r *policyResult) ratios(name string, of func(policyRound) map[string]float64) []float64 {
	return r.ratiosTo(name, policyNone, of)
}

// ratiosTo returns, round by round, name's figure over base's.
func (r *policyResult) ratiosTo(name, base string, of func(policyRound) map[string]float64) []float64 {
	var out []float64
	for _, rd := range r.rounds() {
		a, b := of(rd)[name], of(rd)[base]
		if a > 0 && b > 0 {
			out = append(out, a/b)
		}
	}
	return out
}

func roundCPU(rd policyRound) map[string]float64   { return rd.cpu }
func roundPairs(rd policyRound) map[string]float64 { return rd.pairs }

func (r *policyResult) server(name string) (policyServer, bool) {
	for _, sv := range r.Servers {
		if sv.Name == name {
			return sv, true
		}
	}
	return policyServer{}, false
}

// verdicts states issue #35's two targets for the policy of one identity
// per connection, and this run's figures for them.
func (r *policyResult) verdicts() []string {
	var out []string
	first := fmt.Sprintf("Target server CPU per pair with the policy ≤ %.2f× without:", goalPolicyCPU)
	if st := suite.Aggregate(r.ratios(policyOwn, roundCPU)); st.N > 0 {
		out = append(out, fmt.Sprintf("%s **%.3f×** (median of %d rounds' ratios, %.3f–%.3f; %s).", first, st.Median, st.N, st.Min, st.Max, metOrNot(st.Median <= goalPolicyCPU)))
	} else {
		out = append(out, first+" not measured (no round measured both servers' CPU).")
	}
	if st := suite.Aggregate(r.ratiosTo(policyOwn, policyAdmin, roundCPU)); st.N > 0 {
		out = append(out, fmt.Sprintf("Within one process, checked (`%s`) over unchecked (`%s`): **%.3f×** (%.3f–%.3f; %s).",
			policyOwn, policyAdmin, st.Median, st.Min, st.Max, metOrNot(st.Median <= goalPolicyCPU)))
	}
	if st := suite.Aggregate(r.ratios(policyNoneB, roundCPU)); st.N > 0 {
		out = append(out, fmt.Sprintf("Two processes without a policy (`%s` over `%s`): %.3f× (%.3f–%.3f), the spread between processes of one binary.",
			policyNoneB, policyNone, st.Median, st.Min, st.Max))
	}
	none, ok1 := r.server(policyNone)
	own, ok2 := r.server(policyOwn)
	if ok1 && ok2 && none.IdleRSS > 0 && own.IdleRSS > 0 {
		d := own.IdleRSS - none.IdleRSS
		out = append(out, fmt.Sprintf("Target idle RSS with the policy within 1 MiB of without: **%+.0f KiB** (%s vs %s; %s).",
			float64(d)/1024, fmtMiB(own.IdleRSS), fmtMiB(none.IdleRSS), metOrNot(d <= goalPolicyRSS && d >= -goalPolicyRSS)))
	}
	return out
}

func fmtMiB(b int64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }

// markdown renders the section: rep's header and notes, the servers'
// table, the rounds, the verdicts.
func (r *policyResult) markdown(rep *suite.Report) []byte {
	head := *rep
	head.Charts, head.RawPath = nil, ""
	var b bytes.Buffer
	b.Write(head.Markdown())
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	if len(r.Runs) == 0 {
		p("No run of the policy workload completed.\n\n")
	} else {
		cells := suite.Cells(r.Runs)
		rounds := r.rounds()
		p("### lock+release, %d connections × depth %d\n\n", r.Conns, r.Depth)
		p("Pairs/s median (min–max) over %d round(s); p99 = per-request latency, median of the rounds'; server CPU per pair: median. "+
			"vs %s = the median over rounds of each round's ratio (the servers ran within the same minute).\n\n", len(rounds), policyNone)
		p("| server | identities | rules each | policy file | idle RSS | pairs/s | p99 | server CPU per pair | CPU per pair vs %s | pairs/s vs %s |\n", policyNone, policyNone)
		p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, sv := range r.Servers {
			c, ok := cells[suite.CellKey{Target: sv.Name, Workload: string(loadgen.Lock), Conns: r.Conns, Depth: r.Depth}]
			file, ids, rules := "–", "–", "–"
			if sv.Identities > 0 {
				file, ids, rules = fmt.Sprintf("%.0f KiB", float64(sv.FileBytes)/1024), fmt.Sprint(sv.Identities), fmt.Sprint(sv.Rules)
			}
			if !ok {
				p("| %s | %s | %s | %s | %s | – | – | – | | |\n", sv.Name, ids, rules, file, fmtMiB(sv.IdleRSS))
				continue
			}
			vsCPU, vsPairs := "", ""
			if sv.Name != policyNone {
				vsCPU, vsPairs = "–", "–"
				if st := suite.Aggregate(r.ratios(sv.Name, roundCPU)); st.N > 0 {
					vsCPU = fmt.Sprintf("%.3f×", st.Median)
				}
				if st := suite.Aggregate(r.ratios(sv.Name, roundPairs)); st.N > 0 {
					vsPairs = fmt.Sprintf("%.3f×", st.Median)
				}
			}
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", sv.Name, ids, rules, file, fmtMiB(sv.IdleRSS), fmtPairs(c.Pairs),
				suite.FmtNs(c.P99.Median), fmtStatWith(c.CPUPerPair, suite.FmtNs), vsCPU, vsPairs)
		}
		p("\nServer CPU per pair, round by round (the ratio is to %s in the same round):\n\n| round | first |", policyNone)
		for _, sv := range r.Servers {
			p(" %s |", sv.Name)
			if sv.Name != policyNone {
				p(" ratio |")
			}
		}
		p("\n|---:|---|")
		for _, sv := range r.Servers {
			p("---:|")
			if sv.Name != policyNone {
				p("---:|")
			}
		}
		p("\n")
		for _, rd := range rounds {
			p("| %d | %s |", rd.round, rd.first)
			for _, sv := range r.Servers {
				v := rd.cpu[sv.Name]
				if v > 0 {
					p(" %s |", suite.FmtNs(v))
				} else {
					p(" – |")
				}
				if sv.Name != policyNone {
					if n := rd.cpu[policyNone]; v > 0 && n > 0 {
						p(" %.3f |", v/n)
					} else {
						p(" – |")
					}
				}
			}
			p("\n")
		}
		p("\n%s\n\n", strings.Join(r.verdicts(), " "))
	}
	if rep.RawPath != "" {
		p("Raw results: [`%s`](%s)\n", rep.RawPath, rep.RawPath)
	}
	return b.Bytes()
}
