package main

// "dflockd snapshot restore": a new member's raft directory from a backup
// (dflockctl snapshot save), for a new cluster that starts from the
// backup's state (cluster/backup.go says what it keeps and what it does
// to fences, leases and waiters).

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/dflockd-ng/dflockd/cluster"
	"github.com/dflockd-ng/dflockd/snapfile"
)

const snapshotUsage = `usage: dflockd snapshot restore FILE --raft-dir DIR [--node-id ID] [--cluster-peers PEERS] [--fence-floor N]

Builds a new member's raft directory DIR from a snapshot file (dflockctl
snapshot save): a new cluster whose state is the snapshot's. Restore every
member of the new cluster from the same file with the same --cluster-peers,
then start each with its --raft-dir, --node-id and --cluster-peers as usual
(--cluster-bootstrap is not needed: the directory names the members).

  --raft-dir DIR        the directory to build; it must not exist or be empty
  --node-id ID          this member's id: it must be one of the members
  --cluster-peers PEERS the new cluster's members (id=raftHost:raftPort@clientHost:clientPort,...);
                        without it, the snapshot's members at their raft addresses
  --fence-floor N       fences after the restore are above N too (besides this
                        machine's clock in ns and the snapshot's last fence + 2^40)

The file is checked whole first (length, SHA-256, the state's digest); a
damaged file or a non-empty directory is refused and nothing is written.
`

// runSnapshot is "dflockd snapshot restore".
func runSnapshot(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "restore" {
		return usageError(stderr, "%s", strings.SplitN(snapshotUsage, "\n", 2)[0])
	}
	fs := flag.NewFlagSet("dflockd snapshot restore", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("raft-dir", "", "")
	id := fs.String("node-id", "", "")
	peersFlag := fs.String("cluster-peers", "", "")
	floorFlag := fs.String("fence-floor", "", "")
	var files []string
	rest := args[1:]
	for {
		if err := fs.Parse(rest); err != nil {
			return usageError(stderr, "snapshot restore: %v (dflockd help snapshot)", err)
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	switch {
	case len(files) != 1:
		return usageError(stderr, "snapshot restore: name one snapshot FILE (dflockd help snapshot)")
	case *dir == "":
		return usageError(stderr, "snapshot restore: --raft-dir is required (dflockd help snapshot)")
	}
	var cfg cluster.RestoreConfig
	if *floorFlag != "" {
		n, err := strconv.ParseUint(*floorFlag, 10, 64)
		if err != nil {
			return usageError(stderr, "snapshot restore: --fence-floor %q is not a number", *floorFlag)
		}
		cfg.FenceFloor = n
	}
	var peers []cluster.Peer
	if *peersFlag != "" {
		var err error
		if peers, err = cluster.ParsePeers(*peersFlag); err != nil {
			return usageError(stderr, "snapshot restore: --cluster-peers: %v", err)
		}
		for _, p := range peers {
			cfg.Servers = append(cfg.Servers, raft.Server{ID: p.ID, Address: p.Raft, Suffrage: raft.Voter})
		}
	}
	f, err := os.Open(files[0])
	if err != nil {
		fmt.Fprintf(stderr, "dflockd snapshot restore: %v\n", err)
		return 1
	}
	info, state, err := snapfile.Read(f, nil)
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "dflockd snapshot restore: %s: %v\n", files[0], err)
		return 1
	}
	if *id != "" && cfg.Servers == nil && !hasMember(info.Header.Members, *id) {
		fmt.Fprintf(stderr, "dflockd snapshot restore: --node-id %q is not a member of the snapshot's cluster (name the new members with --cluster-peers)\n", *id)
		return 1
	}
	if *id != "" && cfg.Servers != nil && !hasPeer(peers, *id) {
		return usageError(stderr, "snapshot restore: --cluster-peers does not list --node-id %q", *id)
	}
	r, err := cluster.RestoreDir(*dir, info, state, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "dflockd snapshot restore: %s: %v\n", files[0], err)
		return 1
	}
	var ids []string
	for _, s := range r.Servers {
		ids = append(ids, string(s.ID))
	}
	fmt.Fprintf(stdout, "restored %s into %s: index %d, term %d, digest %x (the snapshot's), members %s; fences after the restore are above %d\n",
		files[0], *dir, r.Index, r.Term, r.Digest, strings.Join(ids, ","), r.FenceFloor)
	return 0
}

func hasMember(ms []snapfile.Member, id string) bool {
	for _, m := range ms {
		if m.ID == id {
			return true
		}
	}
	return false
}
