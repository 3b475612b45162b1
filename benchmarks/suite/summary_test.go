package suite

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeResults writes blob as dir/name the way the suite does.
func writeResults(t *testing.T, dir, name string, blob map[string]any) {
	t.Helper()
	b, err := json.MarshalIndent(blob, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func env(date, cpu, cores, commit string) []KV {
	e := []KV{{"CPU", cpu}, {"cores", cores}, {"date", date}}
	if commit != "" {
		e = append(e, KV{"commit", commit})
	}
	return e
}

func rec(target, workload string, conns, depth int, pairs, ops, cpuPair float64) Record {
	return Record{Target: target, Workload: workload, Conns: conns, Depth: depth, Rep: 1,
		PairsPerS: pairs, ReqPerS: ops, CPUPerPairNs: cpuPair}
}

func rowByPrefix(t *testing.T, rows []SummaryRow, prefix string) SummaryRow {
	t.Helper()
	for _, r := range rows {
		if strings.HasPrefix(r.What, prefix) {
			return r
		}
	}
	t.Fatalf("no row %q", prefix)
	return SummaryRow{}
}

func load(t *testing.T, dir string) []SummaryRow {
	t.Helper()
	res, err := LoadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	return Summary(res)
}

func TestSummaryNothingMeasured(t *testing.T) {
	rows := load(t, t.TempDir())
	if len(rows) != 12 {
		t.Fatalf("%d rows, want one per target (12)", len(rows))
	}
	for _, r := range rows {
		if r.From != nil || r.Met != "–" || !strings.HasPrefix(r.Measured, "not measured: ") {
			t.Errorf("row %q from empty results: measured %q, met %q", r.What, r.Measured, r.Met)
		}
		if strings.Contains(r.Measured, " in `") {
			t.Errorf("row %q names a results file though none exists: %q", r.What, r.Measured)
		}
		if !strings.HasPrefix(r.Reproduce, "go run ./benchmarks/cmd/dflocksuite ") {
			t.Errorf("row %q: no command to measure it: %q", r.What, r.Reproduce)
		}
	}
	md := string(SummaryMarkdown(rows))
	for _, want := range []string{"--target before=ADDR", "--workloads cluster", "--workloads scaling", "--target v1.10.0=ADDR@PID", "--workloads incr,kv,list"} {
		if !strings.Contains(md, want) {
			t.Errorf("summary does not give the command %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "[A]") {
		t.Errorf("summary cites a run though none exists:\n%s", md)
	}
}

func TestSummaryCoreFigures(t *testing.T) {
	dir := t.TempDir()
	writeResults(t, dir, "suite-full.json", map[string]any{
		"environment": env("2026-01-02 03:04 UTC", "Test CPU", "2", ""), // older file: no commit, no command
		"runs": []Record{
			rec("ng", "lock", 50, 16, 300000, 600000, 3000),
			rec("ceiling", "lock", 50, 16, 600000, 1200000, 2000),
			rec("redis-del", "lock", 50, 16, 100000, 200000, 4000),
			rec("ng", "lock", 10, 16, 1, 1, 1), // other shapes do not count
			rec("ng", "hot", 50, 1, 10000, 20000, 40000),
		},
		"memory": []MemResult{{Target: "ng", Scenario: ScenLocks, Items: 100000, Conns: 100, Before: 7 << 20, After: 7<<20 + 15000000, PerItem: 150}},
	})
	rows := load(t, dir)
	checks := []struct{ prefix, measured, met string }{
		{"lock+release, depth 16: server CPU", "**1.50×** (3.00 vs 2.00 µs)", "yes"},
		{"lock+release, depth 16: pairs/s vs Redis", "**3.00×** (300k vs 100k pairs/s)", "yes"},
		{"RSS per held lock", "**150 B**", "yes"},
		{"idle RSS", "**7.0 MiB**", "yes"},
	}
	for _, c := range checks {
		r := rowByPrefix(t, rows, c.prefix)
		if !strings.HasPrefix(r.Measured, c.measured) || r.Met != c.met || r.From == nil || r.From.Name != "suite-full.json" {
			t.Errorf("row %q: measured %q met %q from %v; want %q, %q, suite-full.json", r.What, r.Measured, r.Met, r.From, c.measured, c.met)
		}
	}
	before := rowByPrefix(t, rows, "lock+release, depth 16: pairs/s vs c44aed8")
	if before.From != nil || !strings.Contains(before.Measured, "no `before` target") {
		t.Errorf("before row without a before target: %q", before.Measured)
	}
	hot := rowByPrefix(t, rows, "hot key")
	if hot.From != nil || !strings.Contains(hot.Measured, "no `v1.10.0` target") {
		t.Errorf("hot-key row without a v1.10.0 target: %q", hot.Measured)
	}
	md := string(SummaryMarkdown(rows))
	if !strings.Contains(md, "[A] `suite-full.json`: full run, 2026-01-02 03:04 UTC, commit unknown, Test CPU (2 cores); command unknown") {
		t.Errorf("run line of an older file does not say unknown:\n%s", md)
	}
}

func TestSummaryTargetsNotMet(t *testing.T) {
	dir := t.TempDir()
	writeResults(t, dir, "suite-quick.json", map[string]any{
		"environment": env("2026-01-02 03:04 UTC", "Test CPU", "2", "abc123"),
		"command":     "go run ./benchmarks/cmd/dflocksuite --quick",
		"runs": []Record{
			rec("ng", "lock", 50, 16, 100000, 200000, 4000),
			rec("ceiling", "lock", 50, 16, 600000, 1200000, 2000),
			rec("before", "lock", 50, 16, 100000, 200000, 0),
			rec("ng", "hot", 50, 1, 10000, 20000, 40000),
			rec(TargetV110, "hot", 50, 1, 5000, 10000, 0),
		},
	})
	rows := load(t, dir)
	for _, c := range []struct{ prefix, measured, met string }{
		{"lock+release, depth 16: server CPU", "**2.00×**", "no"},
		{"lock+release, depth 16: pairs/s vs c44aed8", "**1.00×**", "no"},
	} {
		r := rowByPrefix(t, rows, c.prefix)
		if !strings.HasPrefix(r.Measured, c.measured) || r.Met != c.met {
			t.Errorf("row %q: measured %q met %q; want %q, %q", r.What, r.Measured, r.Met, c.measured, c.met)
		}
	}
	// v1.10.0 ran, but a --target address has no server CPU.
	if hot := rowByPrefix(t, rows, "hot key"); hot.From != nil || !strings.Contains(hot.Measured, "server CPU") {
		t.Errorf("hot-key row without v1.10.0's CPU: %q", hot.Measured)
	}
	mem := rowByPrefix(t, rows, "RSS per held lock")
	if mem.From != nil || !strings.HasSuffix(mem.Measured, "in `suite-quick.json`") {
		t.Errorf("memory row from a run without memory: %q, want not measured in suite-quick.json", mem.Measured)
	}
	md := string(SummaryMarkdown(rows))
	if !strings.Contains(md, "quick run, 2026-01-02 03:04 UTC, commit abc123, Test CPU (2 cores); `go run ./benchmarks/cmd/dflocksuite --quick`") {
		t.Errorf("run line does not give mode, commit and command:\n%s", md)
	}
}

func TestSummaryNewestFileWins(t *testing.T) {
	dir := t.TempDir()
	mk := func(name, date string, ngPairs float64) {
		writeResults(t, dir, name, map[string]any{
			"environment": env(date, "Test CPU", "2", ""),
			"runs": []Record{
				rec("ng", "lock", 50, 16, ngPairs, 0, 0),
				rec("redis-del", "lock", 50, 16, 100000, 0, 0),
			},
		})
	}
	mk("suite-full.json", "2026-01-01 00:00 UTC", 300000)
	mk("suite-quick.json", "2026-01-02 00:00 UTC", 150000)
	r := rowByPrefix(t, load(t, dir), "lock+release, depth 16: pairs/s vs Redis")
	if r.From == nil || r.From.Name != "suite-quick.json" || !strings.HasPrefix(r.Measured, "**1.50×**") || r.Met != "no" {
		t.Errorf("newer quick run not used: %q met %q from %v", r.Measured, r.Met, r.From)
	}
}

func TestSummaryPrimitives(t *testing.T) {
	dir := t.TempDir()
	writeResults(t, dir, "primitives-full.json", map[string]any{
		"environment": env("2026-01-02 03:04 UTC", "Test CPU", "2", ""),
		"runs": []Record{
			rec("ng", "incr", 50, 16, 0, 1600000, 0),
			rec("redis", "incr", 50, 16, 0, 1000000, 0),
			rec("ng", "kv", 50, 16, 0, 900000, 0),
			rec("redis", "kv", 50, 16, 0, 1000000, 0),
		},
	})
	r := rowByPrefix(t, load(t, dir), "incr, kset/kget")
	if r.Measured != "incr **1.60×**, kv **0.90×**; not measured: list" || r.Met != "–" || r.From == nil {
		t.Errorf("partial primitives: %q met %q", r.Measured, r.Met)
	}
}

func TestSummaryClusterAndScaling(t *testing.T) {
	dir := t.TempDir()
	writeResults(t, dir, "cluster-full.json", map[string]any{
		"environment": env("2026-01-02 03:04 UTC", "Test CPU", "2", ""),
		"cluster": ClusterResult{Conns: 50,
			Runs: []Record{
				rec(ClusterSingle, "lock", 50, 16, 100000, 0, 0),
				rec(ClusterLeader, "lock", 50, 16, 30000, 0, 0),
				rec(ClusterLeader, "lock", 50, 1, 6000, 0, 0),
				rec(ClusterEtcd, "lock", 50, 1, 500, 0, 0),
			},
			Failover: []FailoverTrial{{Ns: 800e6}, {Ns: 900e6}, {Ns: 2e9}}},
	})
	writeResults(t, dir, "scaling-quick.json", map[string]any{
		"environment": env("2026-01-02 03:04 UTC", "Test CPU", "8", ""),
		"scaling": map[string]any{
			"loops":  []int{1, 8},
			"shapes": []Shape{{1000, 1}, {200, 16}},
			"runs": []map[string]any{ // the command's scalingRun: a Record and its loop count
				{"target": "ng-1", "workload": "lock", "conns": 1000, "depth": 1, "pairs_per_s": 10000.0, "loops": 1},
				{"target": "ng-8", "workload": "lock", "conns": 1000, "depth": 1, "pairs_per_s": 70000.0, "loops": 8},
				{"target": "redis", "workload": "lock", "conns": 1000, "depth": 1, "pairs_per_s": 20000.0},
				{"target": "ng-1", "workload": "lock", "conns": 200, "depth": 16, "pairs_per_s": 100000.0, "loops": 1},
				{"target": "ng-8", "workload": "lock", "conns": 200, "depth": 16, "pairs_per_s": 500000.0, "loops": 8},
			},
		},
	})
	rows := load(t, dir)
	for _, c := range []struct{ prefix, measured, met string }{
		{"3-member cluster (one core)", "**30.0 %**", "yes"},
		{"3-member cluster vs 3-member etcd", "**12.0×**", "yes"},
		{"failover", "**900 ms** (median of 3)", "yes"},
		{"scaling: 8 loops vs 1 loop", "1000×1 **7.00×**; 200×16 **5.00×** (host of 8 cores, not 16)", "no"},
		{"scaling: 8 loops vs Redis", "**3.50×** (host of 8 cores, not 16)", "no"},
	} {
		r := rowByPrefix(t, rows, c.prefix)
		if !strings.HasPrefix(r.Measured, c.measured) || r.Met != c.met || r.From == nil {
			t.Errorf("row %q: measured %q met %q; want %q, %q", r.What, r.Measured, r.Met, c.measured, c.met)
		}
	}
}

func TestSummaryMalformedResults(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cluster-full.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadResults(dir); err == nil || !strings.Contains(err.Error(), "cluster-full.json") {
		t.Fatalf("malformed results accepted or not named: %v", err)
	}
}

func TestWriteSummaryKeepsTheRest(t *testing.T) {
	dir := t.TempDir()
	perf := filepath.Join(dir, "PERF.md")
	doc := "# Title\n\n" + SummarySection.Begin + "\nold table\n" + SummarySection.End + "\n\nhand-written text\n"
	if err := os.WriteFile(perf, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	body, err := WriteSummary(perf, dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(perf)
	if err != nil {
		t.Fatal(err)
	}
	want := "# Title\n\n" + SummarySection.Begin + "\n" + string(body) + SummarySection.End + "\n\nhand-written text\n"
	if string(got) != want {
		t.Errorf("PERF.md after WriteSummary:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(string(got), "old table") {
		t.Error("old summary kept")
	}
}

func TestSummaryHotKeyAgainstV110(t *testing.T) {
	dir := t.TempDir()
	writeResults(t, dir, "suite-full.json", map[string]any{
		"environment": env("2026-01-02 03:04 UTC", "Test CPU", "2", "abc"),
		"runs": []Record{
			rec("ng", "hot", 50, 1, 10000, 20000, 40000),
			rec(TargetV110, "hot", 50, 1, 5000, 10000, 200000), // --target v1.10.0=ADDR@PID: its CPU measured
			rec(TargetV110, "hot", 10, 1, 5000, 10000, 1),      // other connection counts do not count
		},
	})
	r := rowByPrefix(t, load(t, dir), "hot key")
	if r.Measured != "**0.20×** (40.0 vs 200.0 µs)" || r.Met != "yes" || r.From == nil {
		t.Errorf("hot-key row: %q met %q", r.Measured, r.Met)
	}
}
