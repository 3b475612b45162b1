package cluster

import (
	"fmt"
	"net"
	"strings"

	"github.com/hashicorp/raft"
)

// Peer is one member of --cluster-peers: its raft id, the address its
// raft listens on, and the address its clients use (redirects name it).
type Peer struct {
	ID     raft.ServerID
	Raft   raft.ServerAddress
	Client string
}

// ParsePeers reads --cluster-peers: "id=raftHost:raftPort@clientHost:clientPort"
// entries separated by commas (spec §E.2). Ids and both addresses must be
// unique.
func ParsePeers(s string) ([]Peer, error) {
	var peers []Peer
	seen := map[string]bool{}
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		id, addrs, ok := strings.Cut(e, "=")
		if !ok || id == "" {
			return nil, fmt.Errorf("cluster peer %q: want id=raftHost:raftPort@clientHost:clientPort", e)
		}
		ra, ca, ok := strings.Cut(addrs, "@")
		if !ok {
			return nil, fmt.Errorf("cluster peer %q: no @clientHost:clientPort", e)
		}
		for _, a := range []string{ra, ca} {
			if _, port, err := net.SplitHostPort(a); err != nil || port == "" || port == "0" {
				return nil, fmt.Errorf("cluster peer %q: %q is not host:port", e, a)
			}
		}
		for _, k := range []string{"id " + id, "raft " + ra, "client " + ca} {
			if seen[k] {
				return nil, fmt.Errorf("cluster peers: %s appears twice", k)
			}
			seen[k] = true
		}
		peers = append(peers, Peer{ID: raft.ServerID(id), Raft: raft.ServerAddress(ra), Client: ca})
	}
	if len(peers) == 0 {
		return nil, fmt.Errorf("cluster peers: none listed")
	}
	return peers, nil
}
