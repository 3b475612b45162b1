package main

import (
	"errors"
	"flag"

	"github.com/dflockd-ng/dflockd/client"
)

const kvUsage = `usage: dflockctl kv get KEY
       dflockctl kv set KEY VALUE [--ttl S]
       dflockctl kv del KEY
       dflockctl kv cas KEY OLD NEW [--ttl S]

get prints the value (exit 3 if there is none); cas swaps only if the
value is OLD ("" = create, the key must not exist) and exits 75 on a
conflict. --ttl expires the entry after S seconds (0 = never).`

func (c *cli) kv(g *globals, args []string) int {
	sub, args, code, ok := c.subcommand("kv", kvUsage, g, args, "get", "set", "del", "cas")
	if !ok {
		return code
	}
	name := "kv " + sub
	ttl := wholeSeconds{}
	withTTL := func(fs *flag.FlagSet) { fs.Var(&ttl, "ttl", "expire after `seconds` (0 = never)") }
	switch sub {
	case "get", "del":
		pos, code, ok := c.parseCommand(name, kvUsage, g, args, 1, 1, nil)
		if !ok {
			return code
		}
		key := pos[0]
		return c.simple(name, g, key, func(conn *client.Conn) (outcome, error) {
			if sub == "del" {
				return outcome{text: "ok", obj: map[string]bool{"ok": true}}, client.KVDel(conn, key)
			}
			v, err := client.KVGet(conn, key)
			if errors.Is(err, client.ErrNotFound) {
				return outcome{obj: keyValue{Key: key}, code: exitAbsent, note: "no value for " + key}, nil
			}
			return outcome{text: v, obj: keyValue{key, &v}}, err
		})
	case "set":
		pos, code, ok := c.parseCommand(name, kvUsage, g, args, 2, 2, withTTL)
		if !ok {
			return code
		}
		return c.simple(name, g, pos[0], func(conn *client.Conn) (outcome, error) {
			return outcome{text: "ok", obj: keyValue{pos[0], &pos[1]}}, client.KVSet(conn, pos[0], pos[1], ttl.n)
		})
	default: // cas
		pos, code, ok := c.parseCommand(name, kvUsage, g, args, 3, 3, withTTL)
		if !ok {
			return code
		}
		return c.simple(name, g, pos[0], func(conn *client.Conn) (outcome, error) {
			swapped, err := client.KVCAS(conn, pos[0], pos[1], pos[2], ttl.n)
			r := outcome{text: "ok", obj: map[string]bool{"swapped": swapped}}
			if err == nil && !swapped {
				r = outcome{obj: r.obj, code: exitBusy, note: "conflict: the value of " + pos[0] + " is not the one given"}
			}
			return r, err
		})
	}
}
