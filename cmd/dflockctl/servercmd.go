package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/dflockd-ng/dflockd/client"
)

// parseCommand parses the arguments of a server command: its own flags
// (registered by define, which may be nil) and the global options, in any
// order with the positionals, of which there must be between minPos and
// maxPos (maxPos < 0: no limit). On -h it prints usage and the options.
func (c *cli) parseCommand(name, usage string, g *globals, args []string, minPos, maxPos int, define func(*flag.FlagSet)) ([]string, int, bool) {
	fs := flag.NewFlagSet("dflockctl "+name, flag.ContinueOnError)
	g.register(fs)
	if define != nil {
		define(fs)
	}
	pos, _, err := parseArgs(fs, args, -1)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(c.stdout, usage+"\noptions (global ones included):\n")
		printOptions(c.stdout, fs)
		return nil, exitOK, false
	}
	switch {
	case err != nil:
	case len(pos) < minPos:
		err = fmt.Errorf("missing arguments\n%s", usage)
	case maxPos >= 0 && len(pos) > maxPos:
		err = fmt.Errorf("unexpected argument %q\n%s", pos[maxPos], usage)
	}
	if err != nil {
		return nil, c.fail(exitUsage, "%s: %v", name, err), false
	}
	return pos, 0, true
}

// session is one command's access to the server: a client of its own, or
// the prompt's shared one.
type session struct {
	c    *cli
	name string
	cl   *client.Client
	own  bool
	s    settings
}

// open resolves the global options into a session for command name.
func (c *cli) open(name string, g *globals) (*session, int) {
	s, err := g.resolve(c.getenv)
	if err != nil {
		return nil, c.fail(exitUsage, "%s: %v", name, err)
	}
	if c.shared != nil {
		return &session{c: c, name: name, cl: c.shared, s: s}, 0
	}
	cl := &client.Client{Dialer: s.dialer, Servers: s.servers}
	return &session{c: c, name: name, cl: cl, own: true, s: s}, 0
}

// conn returns the connection for key, or an exit code after reporting
// why there is none.
func (s *session) conn(ctx context.Context, key string) (*client.Conn, int) {
	conn, err := s.cl.Conn(ctx, key)
	if err != nil {
		return nil, s.fail(err)
	}
	if s.c.onConn != nil {
		s.c.onConn(conn)
	}
	return conn, 0
}

func (s *session) close() {
	if s.own {
		s.cl.Close()
	}
}

// fail reports a failed exchange with the server and returns the exit
// code for it.
func (s *session) fail(err error) int {
	c, name := s.c, s.name
	var opErr *net.OpError
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, client.ErrAuth):
		if s.s.dialer.AuthToken == "" {
			return c.fail(exitNoPerm, "%s: the server requires an auth token (--auth-token, $%s)", name, envAuthToken)
		}
		return c.fail(exitNoPerm, "%s: the server rejected the auth token", name)
	case errors.As(err, &opErr) && opErr.Op == "dial", errors.As(err, &dnsErr):
		return c.fail(exitUnavailable, "%s: %v", name, err)
	case errors.Is(err, client.ErrNotLeader):
		return c.fail(exitUnavailable, "%s: %v", name, err)
	case errors.Is(err, client.ErrInvalid):
		return c.fail(exitUsage, "%s: %v", name, err)
	case errors.Is(err, client.ErrTimeout):
		return c.fail(exitBusy, "%s: timed out", name)
	}
	return c.fail(exitFailure, "%s: %v", name, err)
}

// outcome is what a command prints: text, or obj with --json. A non-zero
// code (with note on stderr) reports an outcome that is not a success,
// such as an absent key.
type outcome struct {
	text string
	obj  any
	code int
	note string
}

// attempt is a command's connection to key's server, under a context
// that a stop signal (SIGINT, SIGTERM, …) cancels.
type attempt struct {
	s      *session
	conn   *client.Conn // bound to ctx
	ctx    context.Context
	caught <-chan os.Signal
	stop   func()
}

// begin opens a session and key's connection; on failure it reports why
// and returns the exit code. end undoes it.
func (c *cli) begin(name string, g *globals, key string) (*attempt, int) {
	s, code := c.open(name, g)
	if s == nil {
		return nil, code
	}
	ctx, caught, stop := signalContext()
	conn, code := s.conn(ctx, key)
	if conn == nil {
		code = c.interrupted(caught, code)
		stop()
		s.close()
		return nil, code
	}
	return &attempt{s: s, conn: conn.WithContext(ctx), ctx: ctx, caught: caught, stop: stop}, 0
}

func (a *attempt) end() {
	a.stop()
	a.s.close()
}

// failed returns the exit code for err: the signal's if one ended the
// request, else the server failure's.
func (a *attempt) failed(err error) int {
	if a.ctx.Err() != nil {
		return a.s.c.interrupted(a.caught, exitFailure)
	}
	return a.s.fail(err)
}

// simple runs a command that sends requests on key's connection and
// prints their result.
func (c *cli) simple(name string, g *globals, key string, do func(conn *client.Conn) (outcome, error)) int {
	a, code := c.begin(name, g, key)
	if a == nil {
		return code
	}
	defer a.end()
	r, err := do(a.conn)
	if err != nil {
		return a.failed(err)
	}
	c.emit(g, r.text, r.obj)
	if r.note != "" {
		c.fail(r.code, "%s: %s", name, r.note)
	}
	return r.code
}

// interrupted returns the exit code for a command ended by a caught
// signal, or code when none was caught.
func (c *cli) interrupted(caught <-chan os.Signal, code int) int {
	select {
	case sig := <-caught:
		return signalCode(sig)
	default:
		return code
	}
}

const pingUsage = "usage: dflockctl ping [options]"

func (c *cli) ping(g *globals, args []string) int {
	if _, code, ok := c.parseCommand("ping", pingUsage, g, args, 0, 0, nil); !ok {
		return code
	}
	return c.simple("ping", g, "", func(conn *client.Conn) (outcome, error) {
		return outcome{text: "ok", obj: map[string]bool{"ok": true}}, client.Ping(conn)
	})
}

const statsUsage = `usage: dflockctl stats [options]

Prints the server's state as tables: connections, then one table per kind
of key (locks, semaphores, counters, lists, …). With --json, the server's
own JSON document.`

func (c *cli) stats(g *globals, args []string) int {
	if _, code, ok := c.parseCommand("stats", statsUsage, g, args, 0, 0, nil); !ok {
		return code
	}
	return c.simple("stats", g, "", func(conn *client.Conn) (outcome, error) {
		doc, err := client.Stats(conn)
		if err != nil || g.json {
			return outcome{obj: rawJSON(doc)}, err
		}
		table, err := statsTable(doc)
		return outcome{text: table}, err
	})
}

const rawUsage = `usage: dflockctl raw CMD [KEY [ARG...]] [options]

Sends one request as the protocol's three lines (KEY defaults to _, the ARG
words are joined with spaces; put options before CMD, or after --, if ARG
looks like one) and prints the reply line as the server wrote it. The
exit status is 0 whenever the server replied.`

func (c *cli) raw(g *globals, args []string) int {
	pos, code, ok := c.parseCommand("raw", rawUsage, g, args, 1, -1, nil)
	if !ok {
		return code
	}
	key, arg := "_", ""
	if len(pos) > 1 {
		key = pos[1]
	}
	if len(pos) > 2 {
		arg = strings.Join(pos[2:], " ")
	}
	return c.simple("raw", g, key, func(conn *client.Conn) (outcome, error) {
		reply, err := conn.Do(pos[0], key, arg)
		return outcome{text: reply, obj: map[string]string{"reply": reply}}, err
	})
}
