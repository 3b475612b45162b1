package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/internal/testserver"
	"github.com/dflockd-ng/dflockd/version"
	dto "github.com/prometheus/client_model/go"
)

// What an operator's pipeline sees of a cluster member, as a process:
// one log format (raft's lines included), the 401s and the access log in
// it, and /metrics with the build, leader-change and raft latency
// metrics, behind a scrapers' token that opens nothing else.
func TestClusterMemberObservability(t *testing.T) {
	const clientToken, scrapeToken = "client-secret-token", "scrape-secret-token"
	client, raftAddr, httpAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	_, port, _ := net.SplitHostPort(client)
	_, httpPort, _ := net.SplitHostPort(httpAddr)
	cmd := exec.Command(binary(t), "--host", "127.0.0.1", "--port", port, "--http-port", httpPort,
		"--raft-dir", filepath.Join(t.TempDir(), "n1"), "--node-id", "n1", "--raft-addr", raftAddr,
		"--cluster-peers", "n1="+raftAddr+"@"+client, "--cluster-bootstrap",
		"--raft-auth-token", strings.Repeat("k", 40), "--shutdown-timeout", "1",
		"--auth-token", clientToken, "--metrics-token", scrapeToken, "--http-access-log",
		"--log-format", "json", "--debug")
	proc := testserver.Spawn(t, cmd)
	log := proc.Out
	waitFor(t, "the member to say listening", func() bool { return strings.Contains(log.String(), `"msg":"listening"`) })

	hc := &http.Client{Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	get := func(path, token string) (int, []byte) {
		p := &httpProc{base: "http://" + httpAddr, hc: hc}
		return p.call(t, "GET", path, "", token, nil)
	}
	waitFor(t, "the member to lead", func() bool { code, _ := get("/ready", ""); return code == http.StatusOK })

	// The scrapers' token: /metrics, and nothing else.
	if code, b := get("/v1/stats", scrapeToken); code != http.StatusUnauthorized {
		t.Fatalf("/v1/stats with the metrics token: %d %s, want 401", code, b)
	}
	if code, b := get("/metrics", ""); code != http.StatusUnauthorized {
		t.Fatalf("/metrics without a token: %d %s, want 401", code, b)
	}
	// The proposer stamps a batch every second: the leader times them.
	p := &httpProc{base: "http://" + httpAddr, hc: hc}
	var fams map[string]*dto.MetricFamily
	waitFor(t, "commit and apply observations", func() bool {
		fams = p.scrape(t, scrapeToken)
		return histogramCount(fams, "dflockd_raft_commit_duration_seconds") > 0 &&
			histogramCount(fams, "dflockd_raft_apply_duration_seconds") > 0
	})
	if v := metricValue(fams, "dflockd_raft_leader_changes_total"); v < 1 {
		t.Errorf("dflockd_raft_leader_changes_total = %v on a member that leads, want >= 1", v)
	}
	if v := metricValue(fams, "dflockd_build_info", "version", version.String(), "profile", "v2"); v != 1 {
		t.Errorf("dflockd_build_info{version=%q,profile=\"v2\"} = %v, want 1", version.String(), v)
	}
	if code, _ := get("/metrics", clientToken); code != http.StatusOK {
		t.Errorf("/metrics with the clients' token: %d, want 200", code)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-proc.Done():
		if err := proc.Err(); err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit within 30 s of SIGTERM")
	}

	// Every line is one slog JSON object: raft's too.
	var raftLines, refusals, accessed int
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a log line is not JSON: %q", line)
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("a log line lacks slog's %q: %q", k, line)
			}
		}
		if c, _ := m["component"].(string); c == "raft" || strings.HasPrefix(c, "raft.") {
			raftLines++
		}
		switch m["msg"] {
		case "http request unauthorized":
			if m["path"] == "/v1/stats" || m["path"] == "/metrics" {
				refusals++
			}
		case "http request":
			if m["path"] == "/metrics" && m["status"] == float64(200) && m["bytes"].(float64) > 0 {
				accessed++
			}
		}
	}
	if raftLines == 0 {
		t.Error("no raft line came through the server's log (component=raft)")
	}
	if refusals != 2 {
		t.Errorf("%d refusals logged, want 2 (/v1/stats and /metrics)", refusals)
	}
	if accessed == 0 {
		t.Error("no access log line for a scrape")
	}
	for _, secret := range []string{clientToken, scrapeToken} {
		if strings.Contains(log.String(), secret) {
			t.Errorf("the log shows a token (%s…)", secret[:6])
		}
	}
	t.Logf("%d raft lines, %d refusals, %d scrapes logged", raftLines, refusals, accessed)
}

// histogramCount is the observations of a histogram family's first
// series, 0 when it has none.
func histogramCount(fams map[string]*dto.MetricFamily, name string) uint64 {
	if f := fams[name]; f != nil && len(f.Metric) > 0 {
		return f.Metric[0].GetHistogram().GetSampleCount()
	}
	return 0
}
