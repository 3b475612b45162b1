package main

// The noisy workload (--workloads noisy, issue #35 "Sharing one server
// between teams"): what a tenant at its quotas does to the others. One
// dflockd-ng with a policy of two identities: quiet, with no quotas, and
// noisy, with every quota (package noisy drives it at all of them at
// once: locks, waiters, keys, a flood paced by its rate, connections
// beyond its conns quota). The quiet tenant runs the lock loop (lock+
// release, default 10 connections × depth 1) alone and beside the noisy
// one, and (--noisy-control) beside the same noisy tenant with its dials
// sent to a bare sink on the server's CPUs instead of to the server: a
// control for what the dials cost the host whoever serves them (on a
// host of two CPUs, the dialer shares the quiet tenant's load
// generator's and the other end the server's). The phases rotate which goes first each round. The report gives
// the quiet tenant's pairs/s and p99 in each, and their ratios round by
// round.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/dflockd-ng/dflockd/benchmarks/loadgen"
	"github.com/dflockd-ng/dflockd/benchmarks/noisy"
	"github.com/dflockd-ng/dflockd/benchmarks/suite"
	"github.com/dflockd-ng/dflockd/policy"
)

// noisySection is the part of PERF.md the noisy workload rewrites.
var noisySection = suite.Section{Begin: "<!-- suite:noisy:begin -->", End: "<!-- suite:noisy:end -->"}

// goalNoisy: the quiet tenant's throughput and p99 beside the noisy one
// within 10 % of alone (issue #35).
const goalNoisy = 0.10

// Target names and keys of the noisy workload: one server, the quiet
// tenant's load measured in two phases.
const (
	noisyAlone     = "quiet-alone"
	noisyBeside    = "quiet-beside-noisy"
	noisyControl   = "quiet-beside-noisy-sink" // its dials to a sink, not the server
	noisyKeyPrefix = "suite.quiet"
)

// noisyQuota is the noisy identity's quotas but its rate (--noisy-rate):
// small enough that the tenant reaches each within the first moments of a
// round, large enough that every role of package noisy has its keys.
var noisyQuota = noisy.Quota{Locks: 64, Waiters: 16, Keys: 256, Conns: 8}

// noisyRun is one measured run of the quiet tenant, and what the noisy
// tenant's requests got meanwhile (beside it only).
type noisyRun struct {
	suite.Record
	Noisy *noisy.Counts `json:"noisy,omitempty"`
	// NoisyCores is the noisy tenant's process's CPU time ÷ its run.
	NoisyCores float64 `json:"noisy_client_cores,omitempty"`
}

// noisyResult is the workload's outcome, as kept in the raw JSON.
type noisyResult struct {
	Conns    int         `json:"conns"`
	Depth    int         `json:"depth"`
	Quota    noisy.Quota `json:"noisy_quota"`
	Rate     int         `json:"noisy_rate"`
	DialRate int         `json:"noisy_dials_per_s"`
	Control  bool        `json:"control_dials_to_sink"`
	Notes    []string    `json:"notes"`
	Runs     []noisyRun  `json:"runs"` // in the order run; Rep is the round
}

// noisyPolicy is the workload's policy file.
func noisyPolicy(quietToken, noisyToken string, q noisy.Quota, rate int) []byte {
	return []byte(fmt.Sprintf(`# dflocksuite's noisy workload
identity quiet
  token %s
  allow lock %s.*

identity noisy
  token %s
  allow * noisy.*
  quota locks=%d waiters=%d keys=%d conns=%d rate=%d
`, policy.TokenHash(quietToken), noisyKeyPrefix, policy.TokenHash(noisyToken), q.Locks, q.Waiters, q.Keys, q.Conns, rate))
}

func (s *runner) checkNoisyFlags() error {
	switch {
	case s.noisyConns < 1 || s.noisyConns > 20000 || s.noisyDepth < 1 || s.noisyDepth > 4096:
		return fmt.Errorf("--noisy-conns %d and --noisy-depth %d: want 1..20000 and 1..4096", s.noisyConns, s.noisyDepth)
	case s.noisyRate < 1 || s.noisyRate > 10000000:
		return fmt.Errorf("--noisy-rate %d: want 1..10000000 requests a second", s.noisyRate)
	case s.noisyDials < 0 || s.noisyDials > 10000:
		return fmt.Errorf("--noisy-dials %d: want 0..10000 a second", s.noisyDials)
	}
	return nil
}

// stopper is a running noisy tenant.
type stopper interface {
	Stop() (noisy.Counts, error)
}

// noisyPhase starts the server and runs the rounds.
func (s *runner) noisyPhase(ctx context.Context) (*noisyResult, error) {
	toks, err := randomTokens(2)
	if err != nil {
		return nil, err
	}
	quietTok, noisyTok := toks[0], toks[1]
	path := filepath.Join(s.tmp, "noisy.policy")
	if err := os.WriteFile(path, noisyPolicy(quietTok, noisyTok, noisyQuota, s.noisyRate), 0o600); err != nil {
		return nil, err
	}
	p, err := s.startNGProbed(ctx, s.ngBin, authProbe([]string{quietTok}), "--policy-file", path)
	if err != nil {
		return nil, fmt.Errorf("dflockd-ng (noisy): %w", err)
	}
	control := s.noisyControl && s.noisyDials > 0
	res := &noisyResult{Conns: s.noisyConns, Depth: s.noisyDepth, Quota: noisyQuota, Rate: s.noisyRate, DialRate: s.noisyDials, Control: control}
	q := noisyQuota
	cpus := s.noisyCPUs
	if cpus == "" || s.clientCPUs == "" {
		cpus = s.clientCPUs // unpinned runs stay unpinned
	}
	res.Notes = append(res.Notes,
		fmt.Sprintf("One dflockd-ng (`--loops %d --max-locks %d`) with a policy of two identities, pinned to CPU %s: `quiet`, allowed `lock` on `%s.*`, no quotas; `noisy`, allowed everything on `noisy.*`, `quota locks=%d waiters=%d keys=%d conns=%d rate=%d`.",
			s.ngLoops, s.ngMaxLocks, orAll(s.serverCPUs), noisyKeyPrefix, q.Locks, q.Waiters, q.Keys, q.Conns, s.noisyRate),
		fmt.Sprintf("The quiet tenant: the lock+release workload at %d connections × depth %d, every connection authenticated as `quiet`. `%s`: alone; `%s`: while the noisy tenant runs, started before the warm-up and stopped after the window. The two alternate which goes first each round.",
			s.noisyConns, s.noisyDepth, noisyAlone, noisyBeside),
		fmt.Sprintf("The noisy tenant (package `noisy`), all %d of its connections authenticated as `noisy`: one holds %d locks and one queues %d waiters on them (claims one short of its locks quota, waiters at theirs); then, 32 requests in flight each, try-locks on fresh keys each released at once (its claims touch the quota: grants and `error_max_locks`), enqueues on the held keys (`error_max_waiters`), `kset` of fresh keys (`error_max_keys` past %d) and `get` volume, all paced together by its rate of %d requests a second; and %d connections a second beyond its conns quota, each closed by the server at its auth. Every reply is checked.",
			q.Conns, q.Locks-q.Waiters-1, q.Waiters, q.Keys, s.noisyRate, s.noisyDials),
		fmt.Sprintf("The quiet tenant's load generator is this suite, pinned to CPU %s; the noisy tenant is a process of its own (`dflocksuite noisy-tenant`), pinned to CPU %s (`--noisy-cpus`): where the two share a CPU, what the noisy client takes of it (its cores, below) is taken from the quiet tenant's generator too, not only from the server.", orAll(s.clientCPUs), orAll(cpus)))
	if control {
		res.Notes = append(res.Notes, fmt.Sprintf("`%s` (the control, `--noisy-control`): the same noisy tenant, its %d dials a second sent not to the server but to a bare sink (`dflocksuite dial-sink`: a Go listener that reads each auth and closes, as the server does at the quota), a process pinned to the server's CPU %s. Each connection then costs the host what it costs wherever it is served (the dialer, the kernel's work at both ends, a goroutine to read it) with none of it in the server: `%s` ÷ `%s` is the server's part of what the dials do to the quiet tenant.",
			noisyControl, s.noisyDials, orAll(s.serverCPUs), noisyBeside, noisyControl))
	}
	base := target{addr: p.addr, kind: "line", pid: p.pid, tokens: []string{quietTok}, keyPrefix: noisyKeyPrefix}
	alone, beside, sinked := base, base, base
	alone.name, beside.name, sinked.name = noisyAlone, noisyBeside, noisyControl
	phases := []*target{&alone, &beside}
	if control {
		phases = append(phases, &sinked)
	}
	var sink *sinkProc
	if control {
		if sink, err = s.startSinkProc(s.serverCPUs); err != nil {
			return nil, err
		}
		defer func() {
			if _, err := sink.Stop(); err != nil {
				fmt.Fprintln(s.stderr, "dflocksuite:", err)
			}
		}()
	}
	start := func(ctx context.Context, t *target) (stopper, error) {
		cfg := noisy.Config{Addr: p.addr, Token: noisyTok, Quota: q, DialRate: s.noisyDials}
		if t == &sinked {
			cfg.DialAddr = sink.addr
		}
		return s.startNoisyProc(cfg, cpus)
	}
	runs, err := s.noisyRounds(ctx, phases, start)
	if err != nil {
		return nil, err
	}
	res.Runs = runs
	return res, nil
}

// noisyRounds runs the quiet tenant in each phase, the first of which is
// alone and the others beside a noisy tenant start starts, --reps rounds,
// the phases rotating which goes first.
func (s *runner) noisyRounds(ctx context.Context, phases []*target, start func(context.Context, *target) (stopper, error)) ([]noisyRun, error) {
	var out []noisyRun
	total := len(phases) * s.reps
	began := time.Now()
	alone := phases[0]
	for r := 1; r <= s.reps; r++ {
		k := (r - 1) % len(phases)
		order := append(slices.Clone(phases[k:]), phases[:k]...)
		for _, t := range order {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("interrupted: %w", err)
			}
			if len(out) > 0 {
				time.Sleep(s.settle)
			}
			fmt.Fprintf(s.stderr, "[noisy %d/%d] %s lock c=%d d=%d round %d/%d (elapsed %v) … ", len(out)+1, total, t.name,
				s.noisyConns, s.noisyDepth, r, s.reps, time.Since(began).Round(time.Second))
			var ten stopper
			if t != alone {
				var err error
				if ten, err = start(ctx, t); err != nil {
					fmt.Fprintln(s.stderr, "FAIL")
					return nil, fmt.Errorf("round %d: the noisy tenant: %w", r, err)
				}
			}
			rec, err := s.runLoad(ctx, job{t, loadgen.Lock, s.noisyConns, s.noisyDepth, r})
			run := noisyRun{Record: rec}
			if ten != nil {
				c, nerr := ten.Stop()
				run.Noisy = &c
				if np, ok := ten.(*noisyProc); ok {
					run.NoisyCores = np.Cores
				}
				if err == nil && nerr != nil {
					err = fmt.Errorf("the noisy tenant: %w", nerr)
				}
			}
			if err != nil {
				fmt.Fprintln(s.stderr, "FAIL")
				return nil, fmt.Errorf("%s round %d: %w", t.name, r, err)
			}
			fmt.Fprintf(s.stderr, "%s pairs/s, p99 %s", suite.FmtRate(rec.PairsPerS), suite.FmtNs(float64(rec.P99Ns)))
			if c := run.Noisy; c != nil {
				fmt.Fprintf(s.stderr, "; noisy: %d replies (%d error_max_locks, %d error_max_waiters, %d error_max_keys), %d of %d dials closed, client %.2f cores",
					c.Requests, c.MaxLocks, c.MaxWaiters, c.MaxKeys, c.ConnsClosed, c.Dials, run.NoisyCores)
			}
			fmt.Fprintln(s.stderr)
			out = append(out, run)
		}
	}
	return out, nil
}

// noisyRound is one round's runs.
type noisyRound struct {
	round                  int
	first                  string
	alone, beside, control *noisyRun
}

func (r *noisyResult) rounds() []noisyRound {
	var out []noisyRound
	for i := range r.Runs {
		run := &r.Runs[i]
		if len(out) == 0 || out[len(out)-1].round != run.Rep {
			out = append(out, noisyRound{round: run.Rep, first: run.Target})
		}
		rd := &out[len(out)-1]
		switch run.Target {
		case noisyAlone:
			rd.alone = run
		case noisyControl:
			rd.control = run
		default:
			rd.beside = run
		}
	}
	return out
}

// ratios returns beside/alone of a figure, round by round.
func (r *noisyResult) ratios(of func(*noisyRun) float64) []float64 {
	return r.ratiosOf(of, func(rd noisyRound) (*noisyRun, *noisyRun) { return rd.beside, rd.alone })
}

// ratiosOf returns num/den of a figure, round by round, the two runs
// picked from each round by pick.
func (r *noisyResult) ratiosOf(of func(*noisyRun) float64, pick func(noisyRound) (num, den *noisyRun)) []float64 {
	var out []float64
	for _, rd := range r.rounds() {
		num, den := pick(rd)
		if num == nil || den == nil {
			continue
		}
		if a, b := of(den), of(num); a > 0 && b > 0 {
			out = append(out, b/a)
		}
	}
	return out
}

func controlOverAlone(rd noisyRound) (*noisyRun, *noisyRun)  { return rd.control, rd.alone }
func besideOverControl(rd noisyRound) (*noisyRun, *noisyRun) { return rd.beside, rd.control }

func runPairs(x *noisyRun) float64 { return x.PairsPerS }
func runP99(x *noisyRun) float64   { return float64(x.P99Ns) }

// verdict states issue #35's target: throughput and p99 beside the noisy
// tenant both within 10 % of alone.
func (r *noisyResult) verdict() string {
	thr, p99 := suite.Aggregate(r.ratios(runPairs)), suite.Aggregate(r.ratios(runP99))
	msg := fmt.Sprintf("Target the quiet tenant's throughput and p99 beside the noisy one within %.0f %% of alone:", goalNoisy*100)
	if thr.N == 0 || p99.N == 0 {
		return msg + " not measured (no round ran both phases)."
	}
	met := thr.Median >= 1-goalNoisy && p99.Median <= 1+goalNoisy
	v := fmt.Sprintf("%s pairs/s **%.3f×** (%.3f–%.3f), p99 **%.3f×** (%.3f–%.3f), medians of %d rounds' ratios (%s).",
		msg, thr.Median, thr.Min, thr.Max, p99.Median, p99.Min, p99.Max, thr.N, metOrNot(met))
	ca, bc := suite.Aggregate(r.ratiosOf(runP99, controlOverAlone)), suite.Aggregate(r.ratiosOf(runP99, besideOverControl))
	if ca.N > 0 && bc.N > 0 {
		v += fmt.Sprintf("\n\nThe control: the quiet tenant's p99 beside the noisy tenant with its dials sent to a bare sink, ÷ alone, **%.3f×** (%.3f–%.3f): what the noisy tenant does on this host with none of its dials in the server. Beside it against the server ÷ the control, **%.3f×** (%.3f–%.3f): the server's part.",
			ca.Median, ca.Min, ca.Max, bc.Median, bc.Min, bc.Max)
	}
	return v
}

// markdown renders the section.
func (r *noisyResult) markdown(rep *suite.Report) []byte {
	head := *rep
	head.Charts, head.RawPath = nil, ""
	var b bytes.Buffer
	b.Write(head.Markdown())
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	if len(r.Runs) == 0 {
		p("No run of the noisy workload completed.\n\n")
	} else {
		recs := make([]suite.Record, len(r.Runs))
		for i, run := range r.Runs {
			recs[i] = run.Record
		}
		cells := suite.Cells(recs)
		rounds := r.rounds()
		p("### The quiet tenant: lock+release, %d connections × depth %d\n\n", r.Conns, r.Depth)
		p("Pairs/s median (min–max) over %d round(s); p50, p99 = per-request latency, medians of the rounds'; server cores = the server's CPU time over the window ÷ the window, and server CPU per quiet pair = that time ÷ the quiet tenant's pairs (both tenants' work: beside the noisy one, what it costs the server shows here), medians.\n\n", len(rounds))
		p("| phase | pairs/s | p50 | p99 | server cores | server CPU per quiet pair |\n|---|---:|---:|---:|---:|---:|\n")
		for _, name := range []string{noisyAlone, noisyBeside, noisyControl} {
			if name == noisyControl && !r.Control {
				continue
			}
			c, ok := cells[suite.CellKey{Target: name, Workload: string(loadgen.Lock), Conns: r.Conns, Depth: r.Depth}]
			if !ok {
				p("| %s | – | – | – | – | – |\n", name)
				continue
			}
			var cores []float64
			for _, run := range r.Runs {
				if run.Target == name && run.Cores > 0 {
					cores = append(cores, run.Cores)
				}
			}
			p("| %s | %s | %s | %s | %s | %s |\n", name, fmtPairs(c.Pairs), suite.FmtNs(c.P50.Median), suite.FmtNs(c.P99.Median),
				fmtStatWith(suite.Aggregate(cores), fmtCores), fmtStatWith(c.CPUPerPair, suite.FmtNs))
		}
		p("\nRound by round (ratio = beside the noisy tenant / alone):\n\n")
		p("| round | first | pairs/s alone | beside | ratio | p99 alone | beside | ratio | noisy replies | error_max_locks | error_max_waiters | error_max_keys | conns refused | noisy client cores |\n")
		p("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, rd := range rounds {
			if rd.alone == nil || rd.beside == nil {
				continue
			}
			a, bs := rd.alone, rd.beside
			c := noisy.Counts{}
			if bs.Noisy != nil {
				c = *bs.Noisy
			}
			p("| %d | %s | %s | %s | %.3f | %s | %s | %.3f | %d | %d | %d | %d | %d of %d | %s |\n", rd.round, rd.first,
				suite.FmtRate(a.PairsPerS), suite.FmtRate(bs.PairsPerS), bs.PairsPerS/a.PairsPerS,
				suite.FmtNs(float64(a.P99Ns)), suite.FmtNs(float64(bs.P99Ns)), float64(bs.P99Ns)/float64(a.P99Ns),
				c.Requests, c.MaxLocks, c.MaxWaiters, c.MaxKeys, c.ConnsClosed, c.Dials, fmtCoresOr(bs.NoisyCores))
		}
		p("\nThe noisy tenant's counts cover its whole run in the round (setup, warm-up and window).\n\n")
		if r.Control {
			p("The control, round by round (p99 of the quiet tenant):\n\n| round | alone | beside the noisy tenant | beside it, dials to a sink | sink ÷ alone | beside ÷ sink |\n|---:|---:|---:|---:|---:|---:|\n")
			for _, rd := range rounds {
				if rd.alone == nil || rd.beside == nil || rd.control == nil {
					continue
				}
				a, bs, ct := float64(rd.alone.P99Ns), float64(rd.beside.P99Ns), float64(rd.control.P99Ns)
				p("| %d | %s | %s | %s | %.3f | %.3f |\n", rd.round, suite.FmtNs(a), suite.FmtNs(bs), suite.FmtNs(ct), ct/a, bs/ct)
			}
			p("\n")
		}
		p("%s\n\n", r.verdict())
	}
	if rep.RawPath != "" {
		p("Raw results: [`%s`](%s)\n", rep.RawPath, rep.RawPath)
	}
	return b.Bytes()
}

func fmtCoresOr(v float64) string {
	if v <= 0 {
		return "–"
	}
	return fmtCores(v)
}
