package main

import (
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/dflockd-ng/dflockd/internal/testserver"
	"github.com/dflockd-ng/dflockd/policy"
	"github.com/dflockd-ng/dflockd/tlscert/certtest"
)

// The Grafana dashboard and the alerting rules name only metrics the
// server exports: every metric name in every dashboard query and alert
// expression is checked against live /metrics, scraped from a single node
// with TLS, a policy (a quota reached, a request denied) and a fence
// state file, and from a one-member cluster (the raft metrics), after
// traffic that makes the families that appear only once counted show.

const dashboardFile = "../../dist/grafana/dflockd.json"

// prometheusSeries are series Prometheus makes itself, not the server.
var prometheusSeries = map[string]bool{"up": true}

func TestDistMetricsExported(t *testing.T) {
	exported := map[string]dto.MetricType{}
	for name, f := range singleNodeMetrics(t) {
		exported[name] = f.GetType()
	}
	for name, f := range clusterMemberMetrics(t) {
		exported[name] = f.GetType()
	}

	uses := map[string][]string{} // metric name -> where it is used
	exprs := dashboardExprs(t)
	for _, r := range readAlertRules(t) {
		exprs = append(exprs, [2]string{"alert " + r.Alert, r.Expr})
	}
	for _, e := range exprs {
		names := promqlMetricNames(e[1])
		if len(names) == 0 {
			t.Errorf("%s: no metric found in %q", e[0], e[1])
		}
		for _, n := range names {
			uses[n] = append(uses[n], e[0])
		}
	}
	for name, where := range uses {
		if !isExported(exported, name) && !prometheusSeries[name] {
			t.Errorf("%s, used by %s, is not in /metrics", name, strings.Join(slices.Compact(where), "; "))
		}
	}
	if !t.Failed() {
		t.Logf("%d expressions name %d metrics, all exported", len(exprs), len(uses))
	}
}

// isExported: name is a family of /metrics, or a histogram's or summary's
// _bucket, _sum or _count series.
func isExported(exported map[string]dto.MetricType, name string) bool {
	if _, ok := exported[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		switch exported[base] {
		case dto.MetricType_HISTOGRAM:
			return true
		case dto.MetricType_SUMMARY:
			return suffix != "_bucket"
		}
	}
	return false
}

// singleNodeMetrics scrapes a single node with TLS, a policy file and a
// fence state file, after requests that count in every family a
// dashboard or an alert reads.
func singleNodeMetrics(t *testing.T) map[string]*dto.MetricFamily {
	const token = "dist-ops-secret"
	dir := t.TempDir()
	policyFile := filepath.Join(dir, "policy.txt")
	src := "identity ops\n  token " + policy.TokenHash(token) + "\n  allow * *\n  deny write denied/*\n  quota locks=1\n"
	if err := os.WriteFile(policyFile, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	httpAddr := freeAddr(t)
	_, httpPort, _ := net.SplitHostPort(httpAddr)
	p := startTLSProc(t, "--http-port", httpPort, "--policy-file", policyFile,
		"--fence-state-file", filepath.Join(dir, "fence.state"), "--shutdown-timeout", "1")

	c := dialTLS(t, p.addr, p.ca.Pool)
	for _, r := range []struct{ cmd, key, arg, want string }{
		{"auth", "_", token, "ok"},
		{"l", "dist-a", "0 10", "ok "},             // a grant: the request and lock histograms
		{"l", "dist-b", "0 10", "error_max_locks"}, // past quota locks=1: an error reply
		{"incr", "denied/n", "1", "error_denied"},  // deny write denied/*
	} {
		if got := c.do(r.cmd, r.key, r.arg); !strings.HasPrefix(got, r.want) {
			t.Fatalf("%s %s %s: %q, want %q...", r.cmd, r.key, r.arg, got, r.want)
		}
	}

	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: certtest.ClientConfig(p.ca.Pool)}}
	defer hc.CloseIdleConnections()
	hp := &httpProc{base: "https://" + httpAddr, hc: hc, log: p.log}
	var fams map[string]*dto.MetricFamily
	// The HTTP API counts a request once answered: the second scrape
	// shows the first.
	waitFor(t, "the HTTP request metrics", func() bool {
		fams = hp.scrape(t, token)
		return fams["dflockd_http_request_duration_seconds"] != nil
	})
	for _, name := range []string{"dflockd_quota_exceeded_total", "dflockd_denied_total", "dflockd_request_duration_seconds",
		"dflockd_errors_total", "dflockd_fence_persist_failed"} {
		if fams[name] == nil {
			t.Fatalf("%s not in /metrics after the requests that count in it", name)
		}
	}
	// The certificate's expiry is the one the server was given.
	pair, err := tls.LoadX509KeyPair(p.certFile, p.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := metricValue(fams, "dflockd_tls_certificate_expiry_timestamp_seconds", "certificate", "tls-cert"),
		float64(pair.Leaf.NotAfter.Unix()); got != want {
		t.Errorf("dflockd_tls_certificate_expiry_timestamp_seconds{certificate=\"tls-cert\"} = %v, want %v (the certificate's not_after)", got, want)
	}
	return fams
}

// clusterMemberMetrics scrapes a one-member cluster with raft TLS once it
// leads and has timed a commit and an apply.
func clusterMemberMetrics(t *testing.T) map[string]*dto.MetricFamily {
	client, raftAddr, httpAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	_, port, _ := net.SplitHostPort(client)
	_, httpPort, _ := net.SplitHostPort(httpAddr)
	dir := t.TempDir()
	ca := certtest.NewCA(t, "dflockd raft CA")
	leaf := ca.Leaf(t, "n1")
	certFile, keyFile := leaf.Write(t, dir)
	caFile := filepath.Join(dir, "ca.pem")
	certtest.WriteFile(t, caFile, ca.PEM())
	cmd := exec.Command(binary(t), "--host", "127.0.0.1", "--port", port, "--http-port", httpPort,
		"--raft-dir", filepath.Join(dir, "n1"), "--node-id", "n1", "--raft-addr", raftAddr,
		"--cluster-peers", "n1="+raftAddr+"@"+client, "--cluster-bootstrap",
		"--raft-auth-token", strings.Repeat("k", 40), "--shutdown-timeout", "1",
		"--raft-tls-cert", certFile, "--raft-tls-key", keyFile, "--raft-tls-ca", caFile)
	proc := testserver.Spawn(t, cmd)
	waitFor(t, "the member to say listening", func() bool { return strings.Contains(proc.Out.String(), "msg=listening") })
	hc := &http.Client{Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	p := &httpProc{base: "http://" + httpAddr, hc: hc, log: proc.Out}
	waitFor(t, "the member to lead", func() bool { code, _ := p.call(t, "GET", "/ready", "", "", nil); return code == http.StatusOK })
	var fams map[string]*dto.MetricFamily
	// The proposer stamps a batch every second: the leader times them.
	waitFor(t, "commit and apply observations", func() bool {
		fams = p.scrape(t, "")
		return histogramCount(fams, "dflockd_raft_commit_duration_seconds") > 0 &&
			histogramCount(fams, "dflockd_raft_apply_duration_seconds") > 0
	})
	if got, want := metricValue(fams, "dflockd_tls_certificate_expiry_timestamp_seconds", "certificate", "raft-tls-cert"),
		float64(leaf.Cert.NotAfter.Unix()); got != want {
		t.Errorf("dflockd_tls_certificate_expiry_timestamp_seconds{certificate=\"raft-tls-cert\"} = %v, want %v (the certificate's not_after)", got, want)
	}
	return fams
}

// dashboardExprs are the dashboard's PromQL expressions, each with where
// it is: every panel's targets (rows' collapsed panels included) and the
// template variables' queries.
func dashboardExprs(t *testing.T) [][2]string {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var exprs [][2]string
	var walk func([]json.RawMessage)
	walk = func(ps []json.RawMessage) {
		for _, raw := range ps {
			var p panel
			if err := json.Unmarshal(raw, &p); err != nil {
				t.Fatalf("%s: a panel: %v", dashboardFile, err)
			}
			for _, tg := range p.Targets {
				if tg.Expr == "" {
					t.Errorf("panel %q: a target without an expression", p.Title)
				}
				exprs = append(exprs, [2]string{"panel " + p.Title, tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil { // or a plain string
			if err := json.Unmarshal(v.Query, &q.Query); err != nil {
				t.Fatalf("variable %s: query %s: %v", v.Name, v.Query, err)
			}
		}
		// label_values(SELECTOR, LABEL): the selector is the expression.
		m := regexp.MustCompile(`^label_values\((.*),\s*\w+\)$`).FindStringSubmatch(q.Query)
		if m == nil {
			t.Fatalf("variable %s: query %q, want label_values(SELECTOR, LABEL)", v.Name, q.Query)
		}
		exprs = append(exprs, [2]string{"variable " + v.Name, m[1]})
	}
	if len(exprs) < 20 {
		t.Fatalf("%s: only %d expressions", dashboardFile, len(exprs))
	}
	return exprs
}

// PromQL's words that are not metric names: aggregations and keywords.
// Functions are told by the parenthesis that follows them.
var promqlWords = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "and": true, "or": true, "unless": true, "offset": true, "atan2": true,
	"inf": true, "nan": true,
}

var (
	promqlStrings = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promqlBraces  = regexp.MustCompile(`\{[^{}]*\}|\[[^\[\]]*\]`)
	grafanaVars   = regexp.MustCompile(`\$\{[^}]*\}|\$\w+`)
	promqlToken   = regexp.MustCompile(`\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[a-zA-Z]*|[a-zA-Z_:][a-zA-Z0-9_:]*|\(|\)|[^\sa-zA-Z0-9_:()]+`)
	// Label lists: "by (a, b)", "on(job)", "group_left(version)".
	promqlLabelLists = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
)

// promqlMetricNames returns the metric names an expression selects: the
// identifiers left once strings, label matchers, ranges, Grafana's
// variables, grouping label lists, numbers, durations, keywords and
// function names are taken out.
func promqlMetricNames(expr string) []string {
	s := promqlStrings.ReplaceAllString(expr, `""`)
	s = promqlBraces.ReplaceAllString(s, " ")
	s = grafanaVars.ReplaceAllString(s, " ")
	s = promqlLabelLists.ReplaceAllString(s, " ")
	toks := promqlToken.FindAllString(s, -1)
	var names []string
	for i, tok := range toks {
		c := tok[0]
		isIdent := c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !isIdent || promqlWords[strings.ToLower(tok)] || i+1 < len(toks) && toks[i+1] == "(" {
			continue
		}
		if !slices.Contains(names, tok) {
			names = append(names, tok)
		}
	}
	return names
}

// The name extraction on the shapes the dashboard and the rules use.
func TestDistPromQLMetricNames(t *testing.T) {
	for expr, want := range map[string]string{
		`up{job=~".*dflockd.*"} == 0`: "up",
		`histogram_quantile(0.99, sum by (job, instance, le) (rate(dflockd_raft_commit_duration_seconds_bucket[5m]))) > 0.25`: "dflockd_raft_commit_duration_seconds_bucket",
		`(process_open_fds / process_max_fds) > 0.8 and on (job, instance) dflockd_ready`:                                     "process_open_fds process_max_fds dflockd_ready",
		`dflockd_tls_certificate_expiry_timestamp_seconds - time() < 14 * 86400`:                                              "dflockd_tls_certificate_expiry_timestamp_seconds",
		`sum by (command) (rate(dflockd_requests_total{job=~"$job", instance=~"$instance"}[$__rate_interval]))`:               "dflockd_requests_total",
		`increase(x_total[1h] offset 5m) * on (instance) group_left (version) dflockd_build_info{a="b,c"}`:                    "x_total dflockd_build_info",
		`max by (job) (dflockd_raft_leader) == 0`:                                                                             "dflockd_raft_leader",
		`sum(up) / count(up)`: "up",
		`1e3 * 2`:             "",
	} {
		if got := strings.Join(promqlMetricNames(expr), " "); got != want {
			t.Errorf("promqlMetricNames(%q) = %q, want %q", expr, got, want)
		}
	}
}

// The dashboard's queries parse as PromQL: promtool checks them as the
// expressions of a rule file, with Grafana's variables given values.
func TestDistDashboardQueriesParse(t *testing.T) {
	promtool := lookPromtool(t)
	vars := strings.NewReplacer("$__rate_interval", "5m", "$__range", "1h", "$job", ".*", "$instance", ".*")
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	exprs := dashboardExprs(t)
	for i, e := range exprs {
		q, _ := json.Marshal(vars.Replace(e[1])) // a JSON string is a YAML string
		rules.WriteString("      - record: dashboard:expr" + strconv.Itoa(i) + "\n        expr: " + string(q) + "\n")
	}
	file := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exitingCommand(t, promtool, "check", "rules", file).CombinedOutput()
	if want := "SUCCESS: " + strconv.Itoa(len(exprs)) + " rules found"; err != nil || !strings.Contains(string(out), want) {
		t.Fatalf("promtool check rules of the dashboard's queries: %v, want %q\n%s", err, want, out)
	}
}
