package main

// The HTTP API on a cluster member (spec §F.2 V2C rows, §G): --http-port
// serves it beside the member's client listener, over the member's
// cluster hub. Sessions and lock calls are the leader's and go through
// the raft log (httpapi/cluster.go); the other members answer them 503
// not_leader with the leader's client address in X-Dflockd-Leader.
// /v1/stats carries the "cluster" object, /metrics the dflockd_raft_*
// metrics, GET /v1/readindex is the leader's linearizable-read barrier,
// and with --admin-token the admin routes add and remove members
// (cluster.Node.AddVoter, RemoveVoter).

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/dflockd-ng/dflockd/cluster"
	"github.com/dflockd-ng/dflockd/metrics"
)

// maxAdminToken bounds the admin token: it travels in one HTTP header,
// and net/http reads at most 1 MiB of them.
const maxAdminToken = 4096

// resolveAdminToken resolves --admin-token (resolveHeaderToken). It
// serves a single node too (the observatory's force release), so it does
// not need cluster mode. The token is never echoed.
func resolveAdminToken(c *ClusterConfig) error {
	_, err := resolveHeaderToken(&c.AdminToken, c.AdminTokenFile, "--admin-token", "DFLOCKD_ADMIN_TOKEN")
	return err
}

// resolveHeaderToken reads flag's -file setting (file) when the token is
// not given (from its flag or its variable env), trims it, and checks it
// is a single HTTP header value of at most maxAdminToken bytes. It
// returns how to name the token's source in an error; the token is never
// echoed.
func resolveHeaderToken(token *string, file, flag, env string) (what string, err error) {
	*token = strings.TrimSpace(*token)
	what = flag + " (" + env + ")"
	if *token == "" && file != "" {
		what = fmt.Sprintf("%s-file (%s_FILE) %q", flag, env, file)
		b, err := readTokenFile(file)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return what, fmt.Errorf("%s: cannot read the token: %v", what, err)
		}
		if *token = strings.TrimSpace(string(b)); *token == "" {
			return what, fmt.Errorf("%s is empty (after trimming white space)", what)
		}
	}
	if len(*token) > maxAdminToken {
		return what, fmt.Errorf("%s is over %d bytes", what, maxAdminToken)
	}
	for i := 0; i < len(*token); i++ {
		if b := (*token)[i]; b < 0x20 || b == 0x7f {
			return what, fmt.Errorf("%s contains a control character (a line break?); it must be one HTTP header value", what)
		}
	}
	return what, nil
}

// Cancel proposes the withdrawal of a connection's request that waits
// (session.Replica).
func (r *replica) Cancel(conn, tag uint32) error { return r.node.Cancel(conn, tag) }

// raftMetrics reads a member's raft state for /metrics.
func raftMetrics(n *cluster.Node) func() metrics.Raft {
	return func() metrics.Raft {
		r := n.Raft()
		st := r.Stats()
		snap, _ := strconv.ParseUint(st["last_snapshot_index"], 10, 64)
		m := metrics.Raft{
			State: strings.ToLower(r.State().String()), Ready: n.Ready(), Term: r.CurrentTerm(),
			LastLogIndex: r.LastIndex(), CommitIndex: r.CommitIndex(), AppliedIndex: r.AppliedIndex(),
			SnapshotIndex: snap, LastContact: -1,
		}
		if id, _ := n.Leader(); id != "" {
			m.LeaderKnown = true
		}
		if last := r.LastContact(); r.State() != raft.Leader && !last.IsZero() {
			m.LastContact = time.Since(last)
		}
		if f := r.GetConfiguration(); f.Error() == nil {
			for _, s := range f.Configuration().Servers {
				if s.Suffrage == raft.Voter {
					m.Voters++
				}
			}
		}
		return m
	}
}
