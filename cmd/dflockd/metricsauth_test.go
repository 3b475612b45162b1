package main

import (
	"strings"
	"testing"
)

// TestConfigMetricsAuth: --metrics-token, --metrics-token-file and
// --metrics-auth with their variables: trimmed, one header value, never
// echoed, redacted from the debug dump, and a token for an open /metrics
// refused as the contradiction it is.
func TestConfigMetricsAuth(t *testing.T) {
	file, empty := tokenFiles(t)
	for _, c := range []struct {
		args      []string
		vars      map[string]string
		token     string
		auth      string
		accessLog bool
	}{
		{nil, nil, "", "", false},
		{[]string{"--metrics-token", " flag "}, nil, "flag", "", false},
		{nil, map[string]string{"DFLOCKD_METRICS_TOKEN": "env"}, "env", "", false},
		{[]string{"--metrics-token", "flag"}, map[string]string{"DFLOCKD_METRICS_TOKEN": "env"}, "flag", "", false},
		{[]string{"--metrics-token-file", file}, nil, "from-file", "", false},
		{nil, map[string]string{"DFLOCKD_METRICS_TOKEN_FILE": file}, "from-file", "", false},
		{[]string{"--metrics-token-file", file}, map[string]string{"DFLOCKD_METRICS_TOKEN": "env"}, "env", "", false},
		{[]string{"--metrics-token", "t", "--metrics-auth", "TOKEN"}, nil, "t", "token", false},
		{[]string{"--metrics-auth=none", "--auth-token", "client"}, nil, "", "none", false},
		{nil, map[string]string{"DFLOCKD_METRICS_AUTH": "none", "DFLOCKD_HTTP_ACCESS_LOG": "yes"}, "", "none", true},
		{[]string{"--http-access-log"}, nil, "", "", true},
	} {
		cfg, _ := mustLoad(t, c.args, c.vars)
		h := cfg.HTTP
		if h.MetricsToken != c.token || h.MetricsAuth != c.auth || h.AccessLog != c.accessLog {
			t.Errorf("%q %v: metrics token %q, auth %q, access log %v; want %q, %q, %v",
				c.args, c.vars, h.MetricsToken, h.MetricsAuth, h.AccessLog, c.token, c.auth, c.accessLog)
		}
		if c.token != "" && redacted(cfg).HTTP.MetricsToken != "<redacted>" {
			t.Errorf("%q %v: the metrics token is not redacted", c.args, c.vars)
		}
	}
	for _, c := range []struct {
		args []string
		vars map[string]string
		want []string
	}{
		{[]string{"--metrics-token", "hunter2", "--metrics-auth", "none"}, nil,
			[]string{"--metrics-token", "contradicts --metrics-auth=none"}},
		{[]string{"--metrics-token-file", file}, map[string]string{"DFLOCKD_METRICS_AUTH": "none"},
			[]string{"--metrics-token-file", "contradicts"}},
		{[]string{"--metrics-auth", "open"}, nil, []string{"--metrics-auth must be one of token, none"}},
		{nil, map[string]string{"DFLOCKD_METRICS_AUTH": "basic"}, []string{"DFLOCKD_METRICS_AUTH must be one of"}},
		{[]string{"--metrics-token-file", file + ".missing"}, nil, []string{"--metrics-token-file", "cannot read the token"}},
		{[]string{"--metrics-token-file", empty}, nil, []string{"--metrics-token-file", "is empty"}},
		{[]string{"--metrics-token", "hun\nter2"}, nil, []string{"control character"}},
		{[]string{"--metrics-token", "hunter2" + strings.Repeat("x", maxAdminToken)}, nil, []string{"over 4096 bytes"}},
	} {
		if msg := wantErr(t, c.args, c.vars, c.want...); strings.Contains(msg, "hunter") {
			t.Errorf("error %q echoes the metrics token", msg)
		}
	}
}
