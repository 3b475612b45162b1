package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dflockd-ng/dflockd/snapfile"
)

// "snapshot save" takes a backup of a cluster's replicated state from its
// leader's HTTP admin API (GET /v1/admin/snapshot) into a file, written
// atomically (FILE.tmp, fsynced, renamed) and verified as it arrives;
// "snapshot status" checks a file and prints what it holds.
// "dflockd snapshot restore" builds a new member's directory from one.

const snapshotUsage = `usage: dflockctl snapshot save FILE [options]
       dflockctl snapshot status FILE

"save" takes an online, consistent snapshot of a cluster's replicated state
(or a single node's with --raft-dir) from its leader's HTTP admin API
(members started with --http-port and --admin-token), at the leader's
applied index, into FILE: written to FILE.tmp, checked (lengths, SHA-256),
fsynced and renamed, so FILE is whole or absent. Each --http address is
asked in turn until one leads. On a terminal, progress goes to stderr.
"status" checks FILE and prints its format version, size, checksum, index,
members, digest, keys, locks held and last fence.
"dflockd snapshot restore FILE --raft-dir DIR" builds a new member from it.

options (save):
  --http HOST:PORT[,HOST:PORT...]   the members' HTTP API (default: $DFLOCKD_HTTP_HOST, else the
                                    --server host, and port $DFLOCKD_HTTP_PORT, else 6389)
  --admin-token T, --admin-token-file F
                                    the admin token (default: $DFLOCKD_ADMIN_TOKEN,
                                    $DFLOCKD_ADMIN_TOKEN_FILE)
global options: --auth-token (sent as a bearer token), --tls* (HTTPS), --json`

func (c *cli) snapshot(g *globals, args []string) int {
	sub, rest, code, ok := c.subcommand("snapshot", snapshotUsage, g, args, "save", "status")
	if !ok {
		return code
	}
	var o clusterOptions
	define := o.define
	if sub == "status" {
		define = nil
	}
	pos, code, ok := c.parseCommand("snapshot "+sub, snapshotUsage, g, rest, 1, 1, define)
	if !ok {
		return code
	}
	if sub == "status" {
		return c.snapshotStatus(g, pos[0])
	}
	return c.snapshotSave(g, &o, pos[0])
}

// snapshotReport is what save and status print.
type snapshotReport struct {
	File   string          `json:"file"`
	Format int             `json:"format"`
	Size   int64           `json:"size"`
	SHA256 string          `json:"sha256"`
	Header snapfile.Header `json:"header"`
	// FenceFloor: a restore's fences are above it (and above the
	// restoring machine's wall clock in ns).
	FenceFloor uint64 `json:"fence_floor"`
	Elapsed    string `json:"elapsed,omitempty"`
}

func (c *cli) report(g *globals, file string, info *snapfile.Info, elapsed time.Duration) {
	r := snapshotReport{File: file, Format: info.Version, Size: info.Size, SHA256: info.Sum, Header: info.Header,
		FenceFloor: info.Header.Fence + snapfile.RestoreFenceMargin}
	if elapsed > 0 {
		r.Elapsed = elapsed.Round(time.Millisecond).String()
	}
	h := &info.Header
	var ms []string
	for _, m := range h.Members {
		s := m.ID + "=" + m.Address
		if m.Suffrage != "" && m.Suffrage != "Voter" {
			s += " (" + m.Suffrage + ")"
		}
		ms = append(ms, s)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "file        %s\n", file)
	fmt.Fprintf(&b, "format      %d\n", info.Version)
	fmt.Fprintf(&b, "size        %d bytes\n", info.Size)
	fmt.Fprintf(&b, "sha256      %s (verified)\n", info.Sum)
	fmt.Fprintf(&b, "server      dflockd-ng %s, %s\n", h.ServerVersion, h.Created)
	fmt.Fprintf(&b, "index       %d (term %d)\n", h.Index, h.Term)
	fmt.Fprintf(&b, "members     %s\n", strings.Join(ms, ", "))
	fmt.Fprintf(&b, "digest      %s\n", h.Digest)
	fmt.Fprintf(&b, "keys        %d\n", h.Keys)
	fmt.Fprintf(&b, "locks held  %d\n", h.LocksHeld)
	fmt.Fprintf(&b, "fence       %d (the last issued)\n", h.Fence)
	fmt.Fprintf(&b, "fence floor %d (a restore's fences are above it, and above the restoring machine's clock in ns)", r.FenceFloor)
	if elapsed > 0 {
		fmt.Fprintf(&b, "\ntook        %s", r.Elapsed)
	}
	c.emit(g, b.String(), r)
}

func (c *cli) snapshotStatus(g *globals, file string) int {
	f, err := os.Open(file)
	if err != nil {
		return c.fail(exitFailure, "snapshot status: %v", err)
	}
	defer f.Close()
	info, _, err := snapfile.Read(f, nil)
	if err != nil {
		return c.fail(exitFailure, "snapshot status: %s: %v", file, err)
	}
	c.report(g, file, &info, 0)
	return exitOK
}

func (c *cli) snapshotSave(g *globals, o *clusterOptions, file string) int {
	const name = "snapshot save"
	s, token, addrs, err := c.adminTarget(g, o)
	if err != nil {
		return c.fail(exitUsage, "%s: %v", name, err)
	}
	// No overall timeout: a large state takes what it takes; the leader
	// captures it before answering, within adminTimeout.
	tr := &http.Transport{ResponseHeaderTimeout: adminTimeout}
	if s.dialer.TLSConfig != nil {
		tr.TLSClientConfig = s.dialer.TLSConfig
	}
	return c.askLeader(name, s, token, addrs, &http.Client{Transport: tr}, http.MethodGet, "/v1/admin/snapshot", nil,
		func(addr string, resp *http.Response, sent time.Time) (int, error) {
			info, err := c.receive(file, resp.Body)
			resp.Body.Close()
			if err != nil {
				return c.fail(exitFailure, "%s: %s from %s: %v (nothing was saved)", name, file, addr, err), nil
			}
			c.report(g, file, &info, time.Since(sent))
			return exitOK, nil
		})
}

// receive writes body to file atomically: into file.tmp, verified as a
// whole snapshot file, fsynced, renamed over file, the directory fsynced.
// On error nothing is left behind.
func (c *cli) receive(file string, body io.Reader) (snapfile.Info, error) {
	tmp := file + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return snapfile.Info{}, err
	}
	var progress func(done, total int64)
	if f, ok := c.stderr.(*os.File); ok && isTerminal(f) {
		last := time.Time{}
		progress = func(done, total int64) {
			if total == 0 || (time.Since(last) < 200*time.Millisecond && done < total) {
				return
			}
			last = time.Now()
			fmt.Fprintf(c.stderr, "\rsnapshot: %d of %d bytes (%d%%)", done, total, done*100/total)
			if done >= total {
				fmt.Fprintln(c.stderr)
			}
		}
	}
	info, _, err := snapfile.Read(io.TeeReader(body, f), progress)
	if err == nil {
		err = f.Sync()
	}
	if e := f.Close(); err == nil {
		err = e
	}
	if err == nil {
		err = os.Rename(tmp, file)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return info, err
	}
	if d, err := os.Open(filepath.Dir(file)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return info, nil
}
