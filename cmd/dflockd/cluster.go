package main

// Cluster mode (spec §G): with --raft-dir the server is one member of a
// raft cluster (package cluster). Its client listener, and godistlock's
// with --godistlock-port, are served by the gnet loops of package loop, as
// on a single node (or, with --cluster-loops=false and with TLS, by
// package netconn) over a cluster hub:
// every request but stats (godistlock: but HELLO and STATS) goes through
// the replicated log, a follower answers error_not_leader <leader's
// client address> (godistlock: ERR <nonce> not_leader, and a close), and
// a leader that stops leading answers the requests it had in flight the
// same way.

import (
	"sync/atomic"

	"github.com/dflockd-ng/dflockd/internal/fdguard"
	"github.com/dflockd-ng/dflockd/vocab"

	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/dflockd-ng/dflockd/cluster"
	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/loop"
	"github.com/dflockd-ng/dflockd/metrics"
	"github.com/dflockd-ng/dflockd/netconn"
	"github.com/dflockd-ng/dflockd/relay"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/tlscert"
	"github.com/dflockd-ng/dflockd/version"
)

// ClusterConfig is the cluster part of the configuration (spec §E.2 V2C).
type ClusterConfig struct {
	RaftDir       string        // --raft-dir: presence = cluster mode
	NodeID        string        // --node-id
	RaftAddr      string        // --raft-addr: host:port raft listens on, and advertises
	RaftBind      string        // --raft-bind: host:port raft listens on instead (listenRaft)
	Peers         string        // --cluster-peers
	AdvertiseAddr string        // --advertise-addr: this node's client address
	Bootstrap     bool          // --cluster-bootstrap
	Forward       bool          // --cluster-forward: followers relay client connections to the leader (package relay, forward.go)
	Loops         bool          // --cluster-loops (default true): plain-TCP clients on the gnet loops, not netconn
	OrphanTTL     time.Duration // --orphan-ttl: stable-ref orphans kept this long (0: off)
	RaftToken     string        // --raft-auth-token, or the content of RaftTokenFile
	RaftTokenFile string        // --raft-auth-token-file
	RaftTLSCert   string        // --raft-tls-cert, --raft-tls-key, --raft-tls-ca: all or none
	RaftTLSKey    string
	RaftTLSCA     string
	// AdminToken: --admin-token, or the content of AdminTokenFile: the
	// HTTP admin routes' token (admin.go).
	AdminToken     string
	AdminTokenFile string // --admin-token-file
	// Recover (--raft-recover) and AcceptLoss (--raft-accept-loss) say
	// what to do with a damaged raft directory (cluster/damage.go): by
	// default the member refuses to start.
	Recover    bool
	AcceptLoss bool
}

// benchNoRaftMark, set in the environment, leaves the raft log's mark
// unmaintained (cluster.StorageConfig.NoMark): only for the benchmark
// suite, which compares the cluster with and without it. It is not a
// setting: no flag, not in --help.
const benchNoRaftMark = "DFLOCKD_BENCH_NO_RAFT_MARK"

// resolveRaftToken reads --raft-auth-token-file when the token itself is
// not given.
func resolveRaftToken(c *ClusterConfig) error {
	c.RaftToken = strings.TrimSpace(c.RaftToken)
	if c.RaftToken != "" || c.RaftTokenFile == "" {
		return nil
	}
	b, err := os.ReadFile(c.RaftTokenFile)
	if err != nil {
		return fmt.Errorf("--raft-auth-token-file: %w", err)
	}
	c.RaftToken = strings.TrimSpace(string(b))
	return nil
}

// checkCluster validates the cluster settings. Without --raft-dir, any
// other cluster setting is a mistake worth stopping for: the operator
// meant a cluster and would get a lone node.
func checkCluster(cfg *Config) error {
	c := &cfg.Cluster
	if c.RaftDir == "" {
		var errs []error
		if c.NodeID != "" || c.RaftAddr != "" || c.RaftBind != "" || c.Peers != "" || c.Bootstrap {
			errs = append(errs, errors.New("--node-id, --raft-addr, --raft-bind, --cluster-peers and --cluster-bootstrap need --raft-dir (cluster mode)"))
		}
		if c.Forward {
			errs = append(errs, errors.New("--cluster-forward needs --raft-dir (cluster mode): only a cluster member has a leader to forward to"))
		}
		if c.OrphanTTL > 0 {
			errs = append(errs, errors.New("--orphan-ttl needs --raft-dir (cluster mode): a single node's stable-ref is inert"))
		}
		if c.Recover || c.AcceptLoss {
			errs = append(errs, errors.New("--raft-recover and --raft-accept-loss need --raft-dir (cluster mode): they concern its raft log"))
		}
		return errors.Join(errs...)
	}
	var errs []error
	if c.NodeID == "" {
		errs = append(errs, errors.New("--node-id is required with --raft-dir"))
	}
	if c.RaftAddr == "" {
		errs = append(errs, errors.New("--raft-addr is required with --raft-dir"))
	}
	peers, err := cluster.ParsePeers(c.Peers)
	if err != nil {
		errs = append(errs, fmt.Errorf("--cluster-peers: %w", err))
	} else if !hasPeer(peers, c.NodeID) {
		errs = append(errs, fmt.Errorf("--cluster-peers does not list --node-id %q", c.NodeID))
	}
	if len(c.RaftToken) < cluster.MinTokenLen {
		errs = append(errs, fmt.Errorf("--raft-auth-token (or --raft-auth-token-file) is required with --raft-dir and must be at least %d bytes", cluster.MinTokenLen))
	}
	n := 0
	for _, v := range []string{c.RaftTLSCert, c.RaftTLSKey, c.RaftTLSCA} {
		if v != "" {
			n++
		}
	}
	if n != 0 && n != 3 {
		errs = append(errs, errors.New("--raft-tls-cert, --raft-tls-key and --raft-tls-ca go together: all or none"))
	}
	if c.Recover && c.AcceptLoss {
		errs = append(errs, errors.New("--raft-recover and --raft-accept-loss exclude each other: recover copies lost entries back from the leader, accept-loss goes on without them"))
	}
	return errors.Join(errs...)
}

func hasPeer(peers []cluster.Peer, id string) bool {
	for _, p := range peers {
		if string(p.ID) == id {
			return true
		}
	}
	return false
}

// certNotAfter is when the certificate of a raft TLS configuration
// expires; zero for none.
func certNotAfter(cfg *tls.Config) time.Time {
	if cfg == nil || len(cfg.Certificates) == 0 || cfg.Certificates[0].Leaf == nil {
		return time.Time{}
	}
	return cfg.Certificates[0].Leaf.NotAfter
}

// raftTLS returns the mutual TLS 1.3 configurations of the raft stream:
// every peer presents a certificate signed by the CA and checks the
// other's.
func raftTLS(c *ClusterConfig) (server, client *tls.Config, err error) {
	if c.RaftTLSCert == "" {
		return nil, nil, nil
	}
	pair, err := tls.LoadX509KeyPair(c.RaftTLSCert, c.RaftTLSKey)
	if err != nil {
		return nil, nil, fmt.Errorf("--raft-tls-cert/--raft-tls-key: %w", err)
	}
	pem, err := os.ReadFile(c.RaftTLSCA)
	if err != nil {
		return nil, nil, fmt.Errorf("--raft-tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, nil, fmt.Errorf("--raft-tls-ca: no certificate in %s", c.RaftTLSCA)
	}
	server = &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{pair},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	client = &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{pair}, RootCAs: pool,
		// Peers are dialled by address; the CA is the cluster's own, so
		// any certificate it signed is a member.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("raft peer sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: pool, Intermediates: x509.NewCertPool()}
			for _, ic := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(ic)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}}
	return server, client, nil
}

// replica is the node as the hub sees it; the node is made after the hub
// (it delivers to the hub), hence the indirection.
type replica struct{ node *cluster.Node }

func (r *replica) Submit(conn uint32, req *vocab.Request) error { return r.node.Submit(conn, req) }
func (r *replica) SubmitForeign(conn uint32, c *engine.Command) error {
	return r.node.SubmitForeign(conn, c)
}
func (r *replica) ForceRelease(conn uint32, c *engine.Command) error {
	return r.node.ForceRelease(conn, c)
}
func (r *replica) Close(conn uint32) { r.node.Close(conn) }
func (r *replica) SetTenant(conn uint32, name string, claims, waiting, keys int64) error {
	return r.node.SetTenant(conn, name, claims, waiting, keys)
}
func (r *replica) Engine() *engine.Engine            { return r.node.Engine() }
func (r *replica) Now() timerwheel.Instant           { return r.node.Now() }
func (r *replica) Leading() bool                     { return r.node.Leading() }
func (r *replica) LeaderAddr() string                { return r.node.LeaderAddr() }
func (r *replica) ClusterStats() *vocab.ClusterStats { return r.node.ClusterStats() }

// clusterServer is a cluster member as main drives a server: Serve until
// Shutdown, which hands leadership over, drains the clients and stops
// raft.
type clusterServer struct {
	log      *slog.Logger
	node     *cluster.Node
	storage  *cluster.Storage
	hub      *session.Hub
	srv      clientServer
	serve    func() error // srv's Serve
	client   net.Listener
	fw       *relay.Relay // --cluster-forward; nil without
	shutdown time.Duration
	shut     chan struct{}

	// raftEvents are the member's leader changes and commit and apply
	// times, for /metrics (http.go).
	raftEvents *metrics.RaftEvents
	// raftCertNotAfter is when --raft-tls-cert expires (zero without
	// raft TLS), for /metrics; the pair is read once, at startup.
	raftCertNotAfter time.Time
}

// newClusterServer opens the node's storage, binds the raft listener
// (errors before anything says listening), and starts raft. client is
// the bound client listener, gd godistlock's (nil without
// --godistlock-port).
func newClusterServer(cfg Config, log *slog.Logger, guard *fdguard.Guard, client, gd net.Listener, certs *tlscert.Store,
	scfg session.Config, ecfg engine.Config, ncfg netconn.Config) (*clusterServer, error) {
	c := &cfg.Cluster
	peers, _ := cluster.ParsePeers(c.Peers) // checked by LoadConfig
	serverTLS, clientTLS, err := raftTLS(c)
	if err != nil {
		return nil, err
	}
	// raft's lines go through the server's log, in its format (text or
	// JSON), marked component=raft; its Info lines (elections, every
	// replication pipeline started) only with --debug.
	level := hclog.Warn
	if cfg.Debug {
		level = hclog.Debug
	}
	rlog := cluster.RaftLogger(log, level)
	// raft-wal logs through hclog's default logger (it takes no other
	// unless OpenStorage gave one): make that one ours too.
	hclog.SetDefault(rlog)
	storage, err := cluster.OpenStorage(c.RaftDir, cluster.StorageConfig{
		LogOutput: rlog.StandardWriter(&hclog.StandardLoggerOptions{}), Log: log,
		ID: raft.ServerID(c.NodeID), Peers: len(peers), Recover: c.Recover, AcceptLoss: c.AcceptLoss,
		NoMark: os.Getenv(benchNoRaftMark) != ""})
	if err != nil {
		return nil, err
	}
	ln, err := listenRaft(c)
	if err != nil {
		storage.Close()
		return nil, err
	}
	// The node, once made, is told when a peer's raft connection ends:
	// the leader's process may be gone (cluster/quickfailover.go).
	var nodeRef atomic.Pointer[cluster.Node]
	stream, err := cluster.NewStream(guard.Listener(ln), cluster.StreamConfig{Token: []byte(c.RaftToken),
		Advertise: raft.ServerAddress(c.RaftAddr),
		ServerTLS: serverTLS, ClientTLS: clientTLS,
		OnRefused: func(remote string, err error) {
			ncfg.Events.Warn("raft peer refused", "remote", remote, "error", err.Error())
		},
		OnEnded: func() {
			if n := nodeRef.Load(); n != nil {
				n.PeerConnEnded()
			}
		}})
	if err != nil {
		ln.Close()
		storage.Close()
		return nil, err
	}
	// A member recovering a damaged log does not stand for election until
	// it has caught up, and votes only for a candidate that holds what it
	// lost (cluster/voteguard.go).
	trans := storage.Transport(raft.NewNetworkTransportWithLogger(stream, 3, 10*time.Second, rlog))

	addrs := map[raft.ServerID]string{}
	var servers []raft.Server
	for _, p := range peers {
		addrs[p.ID] = p.Client
		servers = append(servers, raft.Server{ID: p.ID, Address: p.Raft, Suffrage: raft.Voter})
	}
	if c.AdvertiseAddr != "" {
		addrs[raft.ServerID(c.NodeID)] = c.AdvertiseAddr
	}
	r := &replica{}
	clock := timerwheel.NewMonoClock()
	hub := session.NewClusterHub(scfg, r, clock)
	var out cluster.Output = hub
	var fw *relay.Relay
	if c.Forward {
		lim := ncfg.Limiter
		fw, out, client = clusterForwarder(cfg, log, client, &ncfg, hub, r)
		if gd != nil {
			// godistlock's connections are not relayed (forward.go): they
			// are admitted under the same caps as the relay's.
			gd = cappedListener{Listener: gd, lim: lim, events: ncfg.Events}
		}
	}
	rc := cluster.DefaultRaft()
	rc.Logger = rlog
	events := metrics.NewRaftEvents() // /metrics registers them, with --http-port
	node, err := cluster.New(cluster.Config{
		Version: version.String(),
		Observer: cluster.Observer{LeaderChange: events.LeaderChanged, Commit: events.ObserveCommit,
			Apply: events.ObserveApply, NewLeader: func(id, raftAddr string) {
				log.Info("raft: a new leader", "leader_id", id, "leader_raft_addr", raftAddr)
			}},
		ID: raft.ServerID(c.NodeID), Transport: trans, Logs: storage.Logs, Stable: storage.Stable,
		Snapshots: storage.Snaps, Raft: rc, Output: out, ClientAddrs: addrs,
		GCInterval: cfg.GCInterval, OrphanTTL: c.OrphanTTL,
		Init: cluster.Init{Profile: ecfg.Profile, DefaultLease: ecfg.DefaultLease, MaxLocks: ecfg.MaxLocks,
			MaxWaiters: ecfg.MaxWaiters, KeepOnDisconnect: ecfg.KeepOnDisconnect, GCMaxIdle: ecfg.GCMaxIdle,
			MaxKeys: ecfg.MaxKeys, MaxListLength: ecfg.MaxListLength, MaxSubscriptions: ecfg.MaxSubscriptions,
			FenceFloor: ecfg.FenceFloor},
	})
	if err != nil {
		_ = trans.(raft.WithClose).Close()
		storage.Close()
		return nil, err
	}
	r.node = node
	nodeRef.Store(node)
	if index, digest := node.FSM().Applied(); index > 0 {
		// raft restored the newest snapshot: a member restored from a
		// backup names the backup's digest here.
		log.Info("raft: replica state at start", "index", index, "state_digest", fmt.Sprintf("%x", digest))
	}
	if c.Bootstrap {
		if err := node.Bootstrap(servers); err != nil {
			_ = node.Shutdown()
			storage.Close()
			return nil, fmt.Errorf("--cluster-bootstrap: %w", err)
		}
	}
	// Plain-TCP clients are served by the gnet loops, as on a single node;
	// TLS ones, and every one with --cluster-loops=false, by netconn (a
	// goroutine per connection, on Go's netpoller). The loops hold the
	// answers an applied entry hands a connection and write them at once
	// (loop/held.go), which made them the cheaper of the two for a
	// member (PERF.md, "Cluster mode").
	var srv clientServer
	var serve func() error
	if certs != nil || !c.Loops {
		if certs != nil {
			ncfg.TLS = certs.Config()
			ncfg.HandshakeTimeout = cfg.ReadTimeout
		}
		ns := netconn.New(hub, ncfg)
		srv, serve = ns, func() error { return serveNetconn(ns, client, gd) }
	} else {
		ls := []net.Listener{client}
		if gd != nil {
			ls = append(ls, gd) // the second listener speaks godistlock
		}
		gs := loop.New(loop.Config{Loops: cfg.Loops, Limiter: ncfg.Limiter, Events: ncfg.Events,
			ShutdownTimeout: cfg.ShutdownTimeout, Logf: ncfg.Logf, Listeners: ls,
			Guard: guard, Count: ncfg.Count, Hub: hub}, clock)
		srv, serve = gs, gs.Serve
	}
	if fw != nil {
		fw.SetServer(srv)
	}
	return &clusterServer{log: log, node: node, storage: storage, hub: hub, srv: srv, serve: serve, raftEvents: events,
		client: client, fw: fw, shutdown: cfg.ShutdownTimeout, shut: make(chan struct{}),
		raftCertNotAfter: certNotAfter(serverTLS)}, nil
}

// listenRaft binds the raft listener: on --raft-bind when given, else on
// --raft-addr, whose host is then resolved once, now. Either way the
// stream advertises --raft-addr as written. In Kubernetes a member's
// stable DNS name resolves only once its pod is published (and is then
// found again at each dial when the pod comes back with a new IP), so
// the pod binds its own interfaces with --raft-bind and advertises the
// name with --raft-addr.
func listenRaft(c *ClusterConfig) (net.Listener, error) {
	if c.RaftBind != "" {
		ln, err := net.Listen("tcp", c.RaftBind)
		if err != nil {
			return nil, fmt.Errorf("--raft-bind %s: %w", c.RaftBind, err)
		}
		return ln, nil
	}
	ln, err := net.Listen("tcp", c.RaftAddr)
	if err != nil {
		var dns *net.DNSError
		if errors.As(err, &dns) {
			return nil, fmt.Errorf("--raft-addr %s: %w (to advertise a name that does not resolve yet, bind another address with --raft-bind)", c.RaftAddr, err)
		}
		return nil, fmt.Errorf("--raft-addr %s: %w", c.RaftAddr, err)
	}
	return ln, nil
}

// serveNetconn serves the client listener and godistlock's, if any, on
// ns until they close; a listener that fails otherwise closes the server
// and its error is returned.
func serveNetconn(ns *netconn.Server, client, gd net.Listener) error {
	if gd == nil {
		return ns.Serve(client, session.Dflockd)
	}
	errs := make(chan error, 2)
	go func() { errs <- ns.Serve(client, session.Dflockd) }()
	go func() { errs <- ns.Serve(gd, session.Godistlock) }()
	var failed error
	for range 2 {
		if err := <-errs; err != nil && failed == nil {
			failed = err
			_ = ns.Close() // the other listener returns too
		}
	}
	return failed
}

// clientServer is what serves a member's clients: a loop.Server (plain
// TCP) or a netconn.Server (TLS).
type clientServer interface {
	Connections() int
	Shutdown(ctx context.Context) error
	// Hangup closes the connections match approves once what was
	// posted to them is written (forward.go).
	Hangup(match func(net.Conn) bool) int
}

// Serve serves clients until Shutdown.
func (s *clusterServer) Serve() error {
	if err := s.serve(); err != nil { // the loops' returns at Shutdown, netconn's at once
		return err
	}
	<-s.shut
	return nil
}

// Shutdown hands leadership to another member first (a planned stop then
// costs clients one redirect, not an election timeout), drains the client
// connections, and stops raft.
func (s *clusterServer) Shutdown(ctx context.Context) error {
	defer close(s.shut)
	if err := s.node.TransferLeadership(); err != nil {
		s.log.Warn("leadership transfer failed; the others elect a leader after the election timeout", "error", err)
	}
	s.hub.Drain()
	if s.shutdown > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.shutdown)
		defer cancel()
	}
	err := s.shutdownClients(ctx) // forward.go
	if e := s.node.Shutdown(); e != nil && err == nil {
		err = e
	}
	if e := s.storage.Close(); e != nil && err == nil {
		err = e
	}
	return err
}

// clusterAttrs describe the node for the listening line, with what serves
// its clients: the gnet loops, or netconn (TLS, --cluster-loops=false).
func clusterAttrs(c *ClusterConfig, tls bool) []any {
	transport := "loops"
	if tls || !c.Loops {
		transport = "netconn"
	}
	return []any{"cluster", true, "node_id", c.NodeID, "raft_addr", c.RaftAddr, "raft_bind", c.RaftBind, "raft_tls", c.RaftTLSCert != "",
		"peers", strings.Count(c.Peers, "="), "forward", c.Forward, "client_transport", transport}
}
