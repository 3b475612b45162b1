package main

import (
	"errors"
	"strconv"

	"github.com/dflockd-ng/dflockd/client"
)

const counterUsage = `usage: dflockctl counter get KEY
       dflockctl counter incr KEY [DELTA]
       dflockctl counter decr KEY [DELTA]
       dflockctl counter set KEY VALUE

Counters are signed 64-bit integers; an absent counter reads 0. incr and
decr (DELTA default 1) print the new value. A negative number goes after
--, as in "counter incr -- KEY -5".`

// counterValue is the JSON form of a counter.
type counterValue struct {
	Key   string `json:"key"`
	Value int64  `json:"value"`
}

func (c *cli) counter(g *globals, args []string) int {
	sub, args, code, ok := c.subcommand("counter", counterUsage, g, args, "get", "incr", "decr", "set")
	if !ok {
		return code
	}
	name := "counter " + sub
	maxPos := map[string]int{"get": 1, "incr": 2, "decr": 2, "set": 2}[sub]
	minPos := map[string]int{"get": 1, "incr": 1, "decr": 1, "set": 2}[sub]
	pos, code, ok := c.parseCommand(name, counterUsage, g, args, minPos, maxPos, nil)
	if !ok {
		return code
	}
	key, n := pos[0], int64(1)
	if len(pos) == 2 {
		var err error
		if n, err = strconv.ParseInt(pos[1], 10, 64); err != nil {
			return c.fail(exitUsage, "%s: %q is not a 64-bit integer", name, pos[1])
		}
	}
	return c.simple(name, g, key, func(conn *client.Conn) (outcome, error) {
		var v int64
		var err error
		switch sub {
		case "get":
			v, err = client.GetCounter(conn, key)
		case "incr":
			v, err = client.Incr(conn, key, n)
		case "decr":
			v, err = client.Decr(conn, key, n)
		default:
			v, err = n, client.SetCounter(conn, key, n)
		}
		// A plain error reply; not-leader and draining say more themselves.
		if errors.Is(err, client.ErrServer) && !errors.Is(err, client.ErrNotLeader) && !errors.Is(err, client.ErrDraining) && sub != "get" {
			err = errors.New("refused (the result would overflow a 64-bit integer, or the key limit is reached)")
		}
		return outcome{text: strconv.FormatInt(v, 10), obj: counterValue{key, v}}, err
	})
}
