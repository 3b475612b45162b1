package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/term"

	"github.com/dflockd-ng/dflockd/client"
)

const interactiveUsage = `usage: dflockctl interactive [options]

A prompt with line editing, history (kept in ~/.dflockctl_history, or
$DFLOCKCTL_HISTFILE) and Tab completion of command names. Each line is a
dflockctl command (kv get k, counter incr hits, list push q a b, stats, …)
or, if its first word is none, a raw request: CMD [KEY [ARG...]], the reply
printed as it is. Words are split as a shell would, quotes included.
listen, watch and observe subscribe and return; their events are printed
as they arrive. Blocking commands run until their timeout. lock, elect,
file and completion are not available here. End with quit, exit, Ctrl-D
or Ctrl-C.

Without a terminal on stdin, lines are read from it and nothing is
prompted: dflockctl interactive < script.`

// lockedWriter serialises writes from the command loop and the push
// printers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (c *cli) interactive(g *globals, args []string) int {
	if _, code, ok := c.parseCommand("interactive", interactiveUsage, g, args, 0, 0, nil); !ok {
		return code
	}
	s, code := c.open("interactive", g)
	if s == nil {
		return code
	}
	defer s.close()
	ctx, cancel := context.WithTimeout(context.Background(), client.DefaultDialTimeout)
	conn, code := s.conn(ctx, "")
	cancel()
	if conn == nil {
		return code
	}

	var read func() (string, error)
	var out io.Writer
	if f, ok := c.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		state, err := term.MakeRaw(int(f.Fd()))
		if err != nil {
			return c.fail(exitFailure, "interactive: %v", err)
		}
		defer term.Restore(int(f.Fd()), state)
		t := term.NewTerminal(struct {
			io.Reader
			io.Writer
		}{f, c.stdout}, "dflockctl "+conn.Addr()+"> ")
		if w, h, err := term.GetSize(int(f.Fd())); err == nil {
			t.SetSize(w, h)
		}
		t.History = loadHistory(histPath(c.getenv))
		t.AutoCompleteCallback = completeCommand
		read, out = t.ReadLine, t
	} else {
		sc := bufio.NewScanner(c.stdin)
		read = func() (string, error) {
			if sc.Scan() {
				return sc.Text(), nil
			}
			if err := sc.Err(); err != nil {
				return "", err
			}
			return "", io.EOF
		}
		out = &lockedWriter{w: c.stdout}
	}

	p := &prompt{
		sub:     &cli{stdin: strings.NewReader(""), stdout: out, stderr: out, getenv: c.getenv, shared: s.cl},
		out:     out,
		g:       *g,
		printed: make(map[<-chan struct{}]bool),
	}
	p.sub.onConn = p.attach
	p.attach(conn)
	for {
		line, err := read()
		if errors.Is(err, io.EOF) {
			return exitOK
		}
		if err != nil && !errors.Is(err, term.ErrPasteIndicator) {
			return c.fail(exitFailure, "interactive: %v", err)
		}
		if p.do(line) {
			return exitOK
		}
	}
}

// prompt runs the lines of an interactive session.
type prompt struct {
	sub *cli
	out io.Writer
	g   globals

	mu      sync.Mutex
	printed map[<-chan struct{}]bool // connections whose pushes are printed
}

// attach starts printing the pushes of conn, once per connection: signals,
// watch events and leader changes, as the server sends them.
func (p *prompt) attach(conn *client.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.printed[conn.Done()] {
		return
	}
	p.printed[conn.Done()] = true
	sc, wc, lc := client.NewSignalConn(conn), client.NewWatchConn(conn), client.NewLeaderConn(conn)
	go func() {
		for s := range sc.Signals() {
			fmt.Fprintf(p.out, "sig %s %s\n", s.Channel, s.Payload)
		}
	}()
	go func() {
		for e := range wc.Events() {
			fmt.Fprintf(p.out, "watch %s %s\n", e.Type, e.Key)
		}
	}()
	go func() {
		for e := range lc.Events() {
			fmt.Fprintf(p.out, "leader %s %s\n", e.Type, e.Key)
		}
	}()
}

// do runs one line and reports whether the session should end.
func (p *prompt) do(line string) (quit bool) {
	words, err := splitWords(line)
	if err != nil {
		fmt.Fprintf(p.out, "(error) %v\n", err)
		return false
	}
	if len(words) == 0 {
		return false
	}
	switch words[0] {
	case "quit", "exit":
		return true
	}
	g := p.g // each line starts from the session's options
	if cmd, ok := commands[words[0]]; ok {
		if !cmd.interactive {
			fmt.Fprintf(p.out, "(error) %s is not available in the prompt\n", words[0])
			return false
		}
		if code := cmd.run(p.sub, &g, words[1:]); code != exitOK {
			fmt.Fprintf(p.out, "(exit %d)\n", code)
		}
		return false
	}
	// Anything else is a raw request; "--" keeps words such as -5 from
	// being read as options.
	if code := commands["raw"].run(p.sub, &g, append([]string{"--"}, words...)); code != exitOK {
		fmt.Fprintf(p.out, "(exit %d)\n", code)
	}
	return false
}

// completeCommand completes the first word of the line on Tab: to the one
// prompt command it starts, or to the longest prefix they share.
func completeCommand(line string, pos int, key rune) (string, int, bool) {
	if key != '\t' || strings.ContainsAny(line[:pos], " ") {
		return "", 0, false
	}
	prefix := line[:pos]
	var match []string
	for _, n := range append(commandNames(true), "quit", "exit") {
		if strings.HasPrefix(n, prefix) {
			match = append(match, n)
		}
	}
	if len(match) == 0 {
		return "", 0, false
	}
	common := match[0]
	for _, m := range match[1:] {
		for !strings.HasPrefix(m, common) {
			common = common[:len(common)-1]
		}
	}
	if len(match) == 1 {
		common += " "
	}
	return common + line[pos:], len(common), true
}

// isTerminal reports whether r is a terminal (the prompt starts by itself
// then).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
