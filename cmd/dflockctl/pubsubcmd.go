package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dflockd-ng/dflockd/client"
)

const signalUsage = `usage: dflockctl signal CHANNEL PAYLOAD...

Sends PAYLOAD (the words joined with spaces) on CHANNEL and prints how many
subscribers received it (a queue group counts once).`

func (c *cli) signal(g *globals, args []string) int {
	pos, code, ok := c.parseCommand("signal", signalUsage, g, args, 2, -1, nil)
	if !ok {
		return code
	}
	payload := strings.Join(pos[1:], " ")
	return c.simple("signal", g, pos[0], func(conn *client.Conn) (outcome, error) {
		n, err := client.Emit(conn, pos[0], payload)
		return outcome{text: strconv.Itoa(n), obj: map[string]int{"receivers": n}}, err
	})
}

const listenUsage = `usage: dflockctl listen PATTERN... [--group G] [--count N] [--timeout S]

Subscribes to the patterns (dot-separated tokens; * matches one token, >
the rest) and prints each signal as "CHANNEL PAYLOAD" until --count
signals have come, --timeout seconds have passed (exit 75 if --count was
not reached) or a signal such as Ctrl-C arrives. With --group the
subscription joins a queue group: one member receives each signal.`

const watchUsage = `usage: dflockctl watch PATTERN... [--count N] [--timeout S]

Prints each change of the keys matching the patterns as "EVENT KEY"
(acquire, release, incr, kset, lpush, …); ends as listen does.`

const observeUsage = `usage: dflockctl observe NAME... [--count N] [--timeout S]

Prints the leadership changes of the elections as "EVENT NAME" (elected,
resigned, failover; elected at once if there is a leader); ends as listen
does.`

// streamFlags are the options of the streaming commands.
type streamFlags struct {
	count   int
	timeout seconds
	group   string
}

func (sf *streamFlags) define(group bool) func(*flag.FlagSet) {
	return func(fs *flag.FlagSet) {
		fs.IntVar(&sf.count, "count", 0, "exit after `N` events (0 = no limit)")
		fs.Var(&sf.timeout, "timeout", "exit after `seconds` (0 = no limit)")
		if group {
			fs.StringVar(&sf.group, "group", "", "join the queue group `NAME`")
		}
	}
}

func (c *cli) listen(g *globals, args []string) int {
	var sf streamFlags
	pos, code, ok := c.parseCommand("listen", listenUsage, g, args, 1, -1, sf.define(true))
	if !ok {
		return code
	}
	return stream(c, g, "listen", pos, sf,
		func(conn *client.Conn) (<-chan client.Signal, func(string) error) {
			sc := client.NewSignalConn(conn)
			return sc.Signals(), func(p string) error { return sc.Listen(p, client.WithGroup(sf.group)) }
		},
		func(s client.Signal) (string, any) {
			return s.Channel + " " + s.Payload, map[string]string{"channel": s.Channel, "payload": s.Payload}
		})
}

func (c *cli) watch(g *globals, args []string) int {
	var sf streamFlags
	pos, code, ok := c.parseCommand("watch", watchUsage, g, args, 1, -1, sf.define(false))
	if !ok {
		return code
	}
	return stream(c, g, "watch", pos, sf,
		func(conn *client.Conn) (<-chan client.WatchEvent, func(string) error) {
			wc := client.NewWatchConn(conn)
			return wc.Events(), wc.Watch
		},
		func(e client.WatchEvent) (string, any) {
			return e.Type + " " + e.Key, map[string]string{"event": e.Type, "key": e.Key}
		})
}

func (c *cli) observe(g *globals, args []string) int {
	var sf streamFlags
	pos, code, ok := c.parseCommand("observe", observeUsage, g, args, 1, -1, sf.define(false))
	if !ok {
		return code
	}
	return stream(c, g, "observe", pos, sf,
		func(conn *client.Conn) (<-chan client.LeaderEvent, func(string) error) {
			lc := client.NewLeaderConn(conn)
			return lc.Events(), lc.Observe
		},
		func(e client.LeaderEvent) (string, any) {
			return e.Type + " " + e.Key, map[string]string{"event": e.Type, "key": e.Key}
		})
}

// subscribeCommands maps a streaming command to its protocol command, for
// the prompt, which subscribes on its shared connection and prints the
// pushes itself.
var subscribeCommands = map[string]string{"listen": "listen", "watch": "watch", "observe": "observe"}

// stream subscribes to every pattern on one connection and prints the
// events until the count, the timeout, a stop signal or the connection's
// end. attach starts the event channel and returns it with the subscribe
// function; render gives an event's text and JSON forms.
func stream[T any](c *cli, g *globals, name string, patterns []string, sf streamFlags,
	attach func(*client.Conn) (<-chan T, func(string) error), render func(T) (string, any)) int {
	a, code := c.begin(name, g, patterns[0])
	if a == nil {
		return code
	}
	defer a.end()
	if c.shared != nil {
		return c.subscribeOnly(a, name, patterns, sf.group)
	}
	events, subscribe := attach(a.conn)
	for _, p := range patterns {
		if err := subscribe(p); err != nil {
			return a.failed(err)
		}
	}
	var deadline <-chan time.Time
	if sf.timeout.d > 0 {
		t := time.NewTimer(sf.timeout.d)
		defer t.Stop()
		deadline = t.C
	}
	for n := 0; sf.count == 0 || n < sf.count; n++ {
		select {
		case ev, ok := <-events:
			if !ok {
				return c.fail(exitFailure, "%s: connection ended: %v", name, a.conn.Err())
			}
			text, obj := render(ev)
			c.emit(g, text, obj)
		case <-deadline:
			if sf.count > 0 {
				return c.fail(exitBusy, "%s: %d of %d events before the timeout", name, n, sf.count)
			}
			return exitOK
		case <-a.ctx.Done():
			return c.interrupted(a.caught, exitFailure)
		}
	}
	return exitOK
}

// subscribeOnly is a streaming command inside the prompt: it subscribes
// and returns; the prompt prints the pushes as they come.
func (c *cli) subscribeOnly(a *attempt, name string, patterns []string, group string) int {
	for _, p := range patterns {
		reply, err := a.conn.Do(subscribeCommands[name], p, group)
		if err != nil {
			return a.failed(err)
		}
		if reply != "ok" {
			return c.fail(exitFailure, "%s %s: server replied %s", name, p, reply)
		}
	}
	fmt.Fprintf(c.stdout, "subscribed; events appear as they come\n")
	return exitOK
}

const barrierUsage = `usage: dflockctl barrier NAME COUNT [--timeout S]

Waits until COUNT participants (this one included) have reached the
barrier NAME, then exits 0; exits 75 if that does not happen within
--timeout seconds (default 10).`

func (c *cli) barrier(g *globals, args []string) int {
	timeout := wholeSeconds{n: defaultLockTimeout}
	pos, code, ok := c.parseCommand("barrier", barrierUsage, g, args, 2, 2, func(fs *flag.FlagSet) {
		fs.Var(&timeout, "timeout", "wait at most `seconds`")
	})
	if !ok {
		return code
	}
	count, err := strconv.Atoi(pos[1])
	if err != nil || count < 1 {
		return c.fail(exitUsage, "barrier: COUNT %q is not a positive number", pos[1])
	}
	return c.simple("barrier", g, pos[0], func(conn *client.Conn) (outcome, error) {
		tripped, err := client.BarrierWait(conn, pos[0], count, time.Duration(timeout.n)*time.Second)
		r := outcome{text: "ok", obj: map[string]bool{"tripped": tripped}}
		if err == nil && !tripped {
			r = outcome{obj: r.obj, code: exitBusy, note: fmt.Sprintf("timed out waiting for %d participants", count)}
		}
		return r, err
	})
}
