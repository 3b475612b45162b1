package main

import (
	"log/slog"
	"net"
	"net/netip"

	"github.com/dflockd-ng/dflockd/internal/fdguard"
)

// warnDescriptors compares the process's file descriptor limit (Go has
// raised the soft limit to the hard one) with --max-connections: each
// client connection holds a descriptor, so a cap above the limit can
// never be reached; the server would run out of descriptors first (it
// stays up, refusing new connections, but the cap is not what bounds
// them). Without a cap the limit is the bound, which is said at INFO.
func warnDescriptors(log *slog.Logger, cfg Config) {
	limit, need, short := fdguard.CheckLimit(cfg.MaxConnections, 1)
	switch {
	case short:
		log.Warn("the file descriptor limit is below what --max-connections allows: clients will be refused for want of descriptors first",
			"fd_limit", limit, "max_connections", cfg.MaxConnections, "descriptors_needed", need,
			"fix", "raise LimitNOFILE (systemd) or ulimit -n, or lower --max-connections")
	case cfg.MaxConnections == 0:
		log.Info("client connections are bounded by the file descriptor limit", "fd_limit", limit)
	}
}

// warnUnbounded prints dflockd v2's startup warnings (spec §E.2): when the
// server listens on anything but loopback (its --host, or --http-host with
// the HTTP API on), every limit left unbounded and a missing auth token is
// a way for the network to exhaust or take over the server, so the
// operator is told which. The HTTP API's caps count only when it is on.
func warnUnbounded(log *slog.Logger, cfg Config) {
	host, wide := cfg.Host, !loopbackOnly(cfg.Host)
	if cfg.HTTP.Port != 0 && !wide {
		h, _, _ := net.SplitHostPort(httpAddr(cfg))
		if !loopbackOnly(h) {
			host, wide = h, true // the HTTP API is what the network reaches
		}
	}
	if !wide {
		return
	}
	if cfg.AuthToken == "" {
		log.Warn("no auth token: anyone who can reach the server can take and release its locks",
			"host", host, "fix", "--auth-token or --auth-token-file")
	}
	type limit struct {
		flag  string
		value int
	}
	limits := []limit{
		{"--max-connections", cfg.MaxConnections},
		{"--max-connections-per-ip", cfg.MaxConnsPerIP},
		{"--max-waiters", cfg.MaxWaiters},
	}
	if cfg.HTTP.Port != 0 {
		limits = append(limits,
			limit{"--http-max-sessions", cfg.HTTP.MaxSessions},
			limit{"--http-max-sessions-per-ip", cfg.HTTP.MaxSessionsPerIP},
			limit{"--http-max-connections-per-ip", cfg.HTTP.MaxConnsPerIP},
			limit{"--http-rate-limit-per-ip", cfg.HTTP.RateLimitPerIP})
	}
	for _, l := range limits {
		if l.value == 0 {
			log.Warn("limit unbounded on a non-loopback address", "flag", l.flag, "host", host)
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
