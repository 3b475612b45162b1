package main

// The policy file (--policy-file): read at start, where a bad file stops
// the server with the line at fault, and again on SIGHUP, where a bad file
// keeps the policy in force and logs why. "dflockd policy hash" prints a
// token's line for the file.

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	"github.com/dflockd-ng/dflockd/policy"
	"github.com/dflockd-ng/dflockd/session"
)

// readPolicy reads and parses a policy file.
func readPolicy(file string) (*policy.Policy, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, policy.MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	p, err := policy.Parse(data)
	if err != nil {
		return nil, err
	}
	if p.Identity(session.AuthTokenIdentity) != nil {
		return nil, fmt.Errorf("policy: identity %q is reserved for the --auth-token holder", session.AuthTokenIdentity)
	}
	// Reading a large file leaves megabytes of garbage (the text, the
	// tries built before they are flattened) that the runtime would give
	// back to the system only minutes later: give it back now, so that a
	// policy costs the resident memory of what it keeps.
	data = nil
	debug.FreeOSMemory()
	return p, nil
}

// loadPolicy reads --policy-file into cfg.Policy.
func loadPolicy(cfg *Config) error {
	if cfg.PolicyFile == "" {
		return nil
	}
	p, err := readPolicy(cfg.PolicyFile)
	if err != nil {
		return fmt.Errorf("--policy-file %s: %w", cfg.PolicyFile, err)
	}
	cfg.Policy = p
	return nil
}

// reloadPolicy answers a SIGHUP: the file is read again; a file that does
// not parse leaves the policy in force.
func reloadPolicy(log *slog.Logger, cfg *Config, hubs ...interface{ SetPolicy(*policy.Policy) bool }) {
	if cfg.PolicyFile == "" {
		return
	}
	p, err := readPolicy(cfg.PolicyFile)
	if err != nil {
		log.Error("SIGHUP: policy not reloaded; the previous one stays in force", "file", cfg.PolicyFile, "error", err)
		return
	}
	for _, h := range hubs {
		h.SetPolicy(p)
	}
	log.Info("SIGHUP: policy reloaded", "file", cfg.PolicyFile, "version", p.Version, "identities", len(p.Identities()))
}

const policyUsage = `usage: dflockd policy hash [TOKEN]

Prints the policy file's line for a token: "token sha256:<hex>". The token
is read from standard input (one line) when not given, so that it stays
out of the shell's history and the process list.
`

// runPolicy is "dflockd policy hash".
func runPolicy(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "hash" || len(args) > 2 {
		return usageError(stderr, "%s", strings.TrimSpace(policyUsage))
	}
	token := ""
	if len(args) == 2 {
		token = args[1]
	} else {
		line, err := bufio.NewReader(os.Stdin).ReadString('\n')
		if err != nil && line == "" {
			fmt.Fprintln(stderr, "dflockd policy hash: no token on standard input")
			return 2
		}
		token = line
	}
	token = strings.TrimSpace(token)
	if token == "" {
		fmt.Fprintln(stderr, "dflockd policy hash: the token is empty")
		return 2
	}
	fmt.Fprintf(stdout, "token %s\n", policy.TokenHash(token))
	return 0
}
