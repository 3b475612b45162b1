package main

// --cluster-forward's wiring: the relay (package relay) over a member's
// client listener, told of leadership by raft's observations, and of a
// deposition by the cluster's output.

import (
	"context"
	"log/slog"
	"net"

	"github.com/hashicorp/raft"

	"github.com/dflockd-ng/dflockd/cluster"
	"github.com/dflockd-ng/dflockd/netconn"
	"github.com/dflockd-ng/dflockd/relay"
	"github.com/dflockd-ng/dflockd/session"
)

// forwardOutput is the hub as the cluster's output, with the hang-up of
// a deposed leader's clients after the hub has answered their waiting
// requests.
type forwardOutput struct {
	*session.Hub
	f *relay.Relay
}

func (o forwardOutput) Demoted() {
	o.Hub.Demoted()
	o.f.Deposed()
}

// clusterForwarder makes the relay of a cluster member with
// --cluster-forward over its client listener: it returns the relay, the
// cluster output to use instead of the hub, and the listener to serve.
// The transport's configuration loses its limiter: the relay admits
// every connection. r.node is read only once serving starts.
func clusterForwarder(cfg Config, log *slog.Logger, client net.Listener, ncfg *netconn.Config, hub *session.Hub,
	r *replica) (*relay.Relay, cluster.Output, net.Listener) {
	f := relay.New(relay.Config{
		Self: cfg.Cluster.NodeID,
		State: func() relay.Leader {
			id, _ := r.node.Leader()
			return relay.Leader{ID: string(id), Addr: r.node.ClientAddr(id), Leading: r.node.Leading()}
		},
		Listener: client, Limiter: ncfg.Limiter, Draining: hub.Draining, WriteTimeout: cfg.WriteTimeout,
		Log: log, Events: ncfg.Events,
		Watch: func(kick func()) func() { return watchLeader(r.node.Raft(), kick) },
	})
	ncfg.Limiter = nil
	return f, forwardOutput{hub, f}, f.Listener()
}

// watchLeader calls kick on each of raft's leader observations until the
// returned function is called.
func watchLeader(r *raft.Raft, kick func()) (stop func()) {
	ch := make(chan raft.Observation, 8)
	ob := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	r.RegisterObserver(ob)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
				kick()
			case <-done:
				return
			}
		}
	}()
	return func() {
		r.DeregisterObserver(ob)
		close(done)
	}
}

// shutdownClients shuts the client server down and, in parallel, the
// relay's connections, under the same deadline.
func (s *clusterServer) shutdownClients(ctx context.Context) error {
	if s.fw == nil {
		return s.srv.Shutdown(ctx)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.fw.Shutdown(ctx)
	}()
	err := s.srv.Shutdown(ctx)
	<-done
	return err
}
