package main

import (
	"log/slog"
	"net"
	"net/netip"
)

// warnUnbounded prints dflockd v2's startup warnings (spec §E.2): when the
// server listens on anything but loopback, every limit left unbounded and
// a missing auth token is a way for the network to exhaust or take over
// the server, so the operator is told which.
func warnUnbounded(log *slog.Logger, cfg Config) {
	if loopbackOnly(cfg.Host) {
		return
	}
	if cfg.AuthToken == "" {
		log.Warn("no auth token: anyone who can reach the server can take and release its locks",
			"host", cfg.Host, "fix", "--auth-token or --auth-token-file")
	}
	for _, l := range []struct {
		flag  string
		value int
	}{
		{"--max-connections", cfg.MaxConnections},
		{"--max-connections-per-ip", cfg.MaxConnsPerIP},
		{"--max-waiters", cfg.MaxWaiters},
	} {
		if l.value == 0 {
			log.Warn("limit unbounded on a non-loopback address", "flag", l.flag, "host", cfg.Host)
		}
	}
}

// loopbackOnly reports whether host binds loopback addresses only: a
// loopback IP, or a name that resolves to nothing else ("localhost").
// The empty host binds every interface.
func loopbackOnly(host string) bool {
	if host == "" {
		return false
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.IsLoopback()
	}
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return false
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return false
		}
	}
	return true
}
