package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"

	"github.com/dflockd-ng/dflockd/cmd/dflockctl/client"
)

// serverFlags parses the arguments of a server subcommand that takes no
// positional arguments (stats, ping).
func (c *cli) serverFlags(name string, args []string) (client.Config, int, bool) {
	var ep endpointFlags
	fs := flag.NewFlagSet("dflockctl "+name, flag.ContinueOnError)
	ep.register(fs)
	pos, _, err := parseArgs(fs, args, -1)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(c.stdout, "usage: dflockctl %s [options]\n", name)
		fs.SetOutput(c.stdout)
		fs.PrintDefaults()
		return client.Config{}, exitOK, false
	}
	if err == nil && len(pos) != 0 {
		err = fmt.Errorf("unexpected argument %q", pos[0])
	}
	if err != nil {
		return client.Config{}, c.fail(exitUsage, "%s: %v", name, err), false
	}
	cfg, err := ep.config(c.getenv)
	if err != nil {
		return cfg, c.fail(exitUsage, "%s: %v", name, err), false
	}
	return cfg, 0, true
}

// connect dials and authenticates, reporting a failure and its exit code.
func (c *cli) connect(ctx context.Context, name string, cfg client.Config) (*client.Client, int) {
	cl, err := client.Dial(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil, exitFailure // the caller reports why it cancelled
		}
		return nil, c.serverFailure(name, cfg, err)
	}
	return cl, exitOK
}

// serverFailure reports a failed exchange with the server and returns the
// exit code for it.
func (c *cli) serverFailure(name string, cfg client.Config, err error) int {
	var opErr *net.OpError
	switch {
	case errors.Is(err, client.ErrAuth):
		if cfg.AuthToken == "" {
			return c.fail(exitNoPerm, "%s: %s requires an auth token (--auth-token, $%s)", name, cfg.Addr, envAuthToken)
		}
		return c.fail(exitNoPerm, "%s: %s rejected the auth token", name, cfg.Addr)
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return c.fail(exitUnavailable, "%s: %v", name, err)
	}
	return c.fail(exitFailure, "%s: %v", name, err)
}

func (c *cli) stats(args []string) int {
	cfg, code, ok := c.serverFlags("stats", args)
	if !ok {
		return code
	}
	ctx := context.Background()
	cl, code := c.connect(ctx, "stats", cfg)
	if cl == nil {
		return code
	}
	defer cl.Close()
	doc, err := cl.Stats(ctx)
	if err != nil {
		return c.serverFailure("stats", cfg, err)
	}
	fmt.Fprintln(c.stdout, doc)
	return exitOK
}

func (c *cli) ping(args []string) int {
	cfg, code, ok := c.serverFlags("ping", args)
	if !ok {
		return code
	}
	ctx := context.Background()
	cl, code := c.connect(ctx, "ping", cfg)
	if cl == nil {
		return code
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		return c.serverFailure("ping", cfg, err)
	}
	fmt.Fprintln(c.stdout, "ok")
	return exitOK
}
