package main

import (
	"context"
	"log/slog"
	"net"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/internal/fdguard"
	"github.com/dflockd-ng/dflockd/loop"
	"github.com/dflockd-ng/dflockd/netconn"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/tlscert"
)

// lineParams is what the line protocol's server is made from (run).
type lineParams struct {
	cfg    Config
	log    *slog.Logger
	logf   func(string, ...any)
	guard  *fdguard.Guard
	certs  *tlscert.Store // nil without TLS
	scfg   session.Config
	ecfg   engine.Config
	ncfg   netconn.Config // the goroutine transport's, for TLS and cluster members
	addr   string         // the line protocol's host:port
	binds  []string       // every listener's host:port: the line protocol's, then godistlock's if any
	gdAddr string         // "tcp://" + godistlock's, or ""
	loops  int
	ready  chan struct{} // closed once the server accepts connections
}

// line is the line protocol's server and what the HTTP API shares of it.
type line struct {
	srv interface {
		Serve() error
		Shutdown(context.Context) error
	}
	// hub is a single node's hub, shared by the line protocol's transport
	// and the HTTP API, whose sessions then queue in the same FIFOs; run
	// runs its housekeeping (hub.Start) from before serving to after the
	// last transport has stopped. nil on a cluster member, whose hub is
	// the cluster's.
	hub       *session.Hub
	member    *clusterServer // cluster mode: serves the HTTP API over its own hub
	transport string         // "tcp" or "tls", for the HTTP API's stats
	conns     func() int
}

// startError is a startup failure and how to log it.
type startError struct {
	msg   string
	attrs []any
}

func (e *startError) Error() string { return e.msg }

// startLine binds the listeners and makes the line protocol's server: a
// cluster member's, the TLS transport (netconn), or the gnet loops. The
// listeners are bound here, so that a bind error is reported with its
// real reason before anything says listening.
func startLine(p lineParams) (*line, error) {
	cfg := &p.cfg
	ln := &line{transport: "tcp", conns: func() int { return 0 }}
	if cfg.Cluster.RaftDir != "" {
		ls, failed, err := listenAll(p.guard, p.binds)
		if err != nil {
			return nil, &startError{"cannot listen", []any{"addr", failed, "error", err}}
		}
		var gd net.Listener // godistlock's, if any
		if len(ls) > 1 {
			gd = ls[1]
		}
		cs, err := newClusterServer(*cfg, p.log, p.guard, ls[0], gd, p.certs, p.scfg, p.ecfg, p.ncfg)
		if err != nil {
			for _, l := range ls {
				l.Close()
			}
			return nil, &startError{"cannot start the cluster member", []any{"error", err}}
		}
		ln.srv, ln.member, ln.conns = cs, cs, cs.srv.Connections
		if p.certs != nil {
			ln.transport = "tls"
		}
		close(p.ready)
		return ln, nil
	}
	ls, failed, err := listenAll(p.guard, p.binds)
	if err != nil {
		return nil, &startError{"cannot listen", []any{"addr", failed, "error", err}}
	}
	if p.certs != nil {
		ln.hub = session.NewServerHub(p.scfg, p.ecfg, timerwheel.NewMonoClock(), cfg.GCInterval)
		ts := newTLSServer(*cfg, p.certs, ls, ln.hub, p.ncfg)
		ln.srv, ln.transport, ln.conns = ts, "tls", ts.Connections
		close(p.ready)
		return ln, nil
	}
	// The loops accept on the listeners (through the guard).
	clock := timerwheel.NewMonoClock()
	ln.hub = session.NewServerHub(p.scfg, p.ecfg, clock, cfg.GCInterval)
	gs := loop.New(loop.Config{
		Addr:            "tcp://" + p.addr,
		Loops:           p.loops,
		Limiter:         p.ncfg.Limiter,
		Events:          p.ncfg.Events,
		GCInterval:      cfg.GCInterval,
		ShutdownTimeout: cfg.ShutdownTimeout,
		Logf:            p.logf,
		Ready:           p.ready,
		GodistlockAddr:  p.gdAddr,
		Listeners:       ls,
		Guard:           p.guard,
		Count:           p.ncfg.Count,
		Hub:             ln.hub, // which has the session settings (scfg) and the engine
	}, clock)
	ln.srv, ln.conns = gs, gs.Connections
	return ln, nil
}
