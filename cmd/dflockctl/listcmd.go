package main

import (
	"errors"
	"flag"
	"strconv"
	"strings"

	"github.com/dflockd-ng/dflockd/client"
)

const listUsage = `usage: dflockctl list push KEY VALUE... [--left]
       dflockctl list pop KEY [--right] [--wait S]
       dflockctl list range KEY [START [STOP]]
       dflockctl list len KEY

push appends the values (--left: prepends each) and prints the length;
pop takes the first value (--right: the last), waiting up to --wait
seconds for one, and exits 3 if the list is empty, 75 if the wait ran
out; range prints the values from START to STOP (default 0 and -1, the
last), one a line.`

// listLength is the JSON form of a list's length.
type listLength struct {
	Key    string `json:"key"`
	Length int    `json:"length"`
}

func (c *cli) list(g *globals, args []string) int {
	sub, args, code, ok := c.subcommand("list", listUsage, g, args, "push", "pop", "range", "len")
	if !ok {
		return code
	}
	name := "list " + sub
	var left, right bool
	var wait seconds
	define := map[string]func(*flag.FlagSet){
		"push": func(fs *flag.FlagSet) { fs.BoolVar(&left, "left", false, "prepend instead of append") },
		"pop": func(fs *flag.FlagSet) {
			fs.BoolVar(&right, "right", false, "take the last value instead of the first")
			fs.Var(&wait, "wait", "wait up to `seconds` for a value")
		},
	}[sub]
	minPos, maxPos := map[string]int{"push": 2, "pop": 1, "range": 1, "len": 1}[sub], map[string]int{"push": -1, "pop": 1, "range": 3, "len": 1}[sub]
	pos, code, ok := c.parseCommand(name, listUsage, g, args, minPos, maxPos, define)
	if !ok {
		return code
	}
	key := pos[0]
	switch sub {
	case "push":
		return c.simple(name, g, key, func(conn *client.Conn) (outcome, error) {
			n := 0
			for _, v := range pos[1:] {
				var err error
				if left {
					n, err = client.LPush(conn, key, v)
				} else {
					n, err = client.RPush(conn, key, v)
				}
				if err != nil {
					return outcome{}, err
				}
			}
			return outcome{text: strconv.Itoa(n), obj: listLength{key, n}}, nil
		})
	case "pop":
		return c.simple(name, g, key, func(conn *client.Conn) (outcome, error) {
			v, err := popValue(conn, key, right, wait)
			if errors.Is(err, client.ErrNotFound) {
				return outcome{obj: keyValue{Key: key}, code: exitAbsent, note: key + " is empty"}, nil
			}
			return outcome{text: v, obj: keyValue{key, &v}}, err
		})
	case "len":
		return c.simple(name, g, key, func(conn *client.Conn) (outcome, error) {
			n, err := client.LLen(conn, key)
			return outcome{text: strconv.Itoa(n), obj: listLength{key, n}}, err
		})
	default: // range
		bounds := []int{0, -1}
		for i, s := range pos[1:] {
			n, err := strconv.Atoi(s)
			if err != nil {
				return c.fail(exitUsage, "%s: %q is not an index", name, s)
			}
			bounds[i] = n
		}
		return c.simple(name, g, key, func(conn *client.Conn) (outcome, error) {
			items, err := client.LRange(conn, key, bounds[0], bounds[1])
			if items == nil {
				items = []string{}
			}
			return outcome{text: strings.Join(items, "\n"), obj: items}, err
		})
	}
}

// popValue pops without waiting, or with a wait the blocking pop; either
// way an empty list is ErrNotFound and a wait that ran out ErrTimeout.
func popValue(conn *client.Conn, key string, right bool, wait seconds) (string, error) {
	if !wait.set || wait.d == 0 {
		if right {
			return client.RPop(conn, key)
		}
		return client.LPop(conn, key)
	}
	// The protocol counts whole seconds; the client rounds up.
	if right {
		return client.BRPop(conn, key, wait.d)
	}
	return client.BLPop(conn, key, wait.d)
}
