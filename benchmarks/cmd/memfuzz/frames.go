package main

// The random frame generator. A frame is the three lines of a request
// (command, key, argument). Most are well formed with valid or invalid
// arguments; -junk of them carry a random command word, and -misalign are
// one or two stray lines instead, which shift the server's framing for the
// rest of the connection.
//
// Keys come from a bounded space, so whatever the server keeps per key is
// bounded too and growth beyond it is the server's own: k0..k<keys-1>,
// ch.<i>.<j> with i, j < chans, a fixed pool of junk names, and three
// invalid keys.

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// commands is every command of the line protocol: dflockd v2's and those of
// its redis-feats line.
var commands = []string{
	"l", "r", "n", "e", "w",
	"sl", "sr", "sn", "se", "sw",
	"rl", "wl", "rr", "wr", "rn", "wn", "re", "we", "rw", "ww",
	"incr", "decr", "get", "cset",
	"kset", "kget", "kdel", "kcas",
	"lpush", "rpush", "lpop", "rpop", "llen", "lrange", "blpop", "brpop",
	"listen", "unlisten", "signal",
	"watch", "unwatch",
	"bwait",
	"elect", "resign", "observe", "unobserve",
	"auth", "ping", "stats", "barrier", "stable-ref",
}

// invalidKeys are keys every server must refuse.
var invalidKeys = []string{"", "bad key", "tab\tkey"}

// wildcards are the fixed listen/watch patterns; "k*" and "a.>.b" are
// invalid.
var wildcards = []string{">", "*", "ch.>", "ch.*", "k*", "a.>.b"}

type frameKind uint8

const (
	validFrame      frameKind = iota // a known command, its arguments valid or not
	junkFrame                        // three lines, a random command word
	misalignedFrame                  // one or two stray lines
)

// genConfig is what the generators of one run share; read-only.
type genConfig struct {
	cmds                 []string // commands sent: all but -skip
	keys, chans          int
	junk, misalign, wild float64
	junkPool             []string // junk names, shared so that they stay few
}

// generator makes one connection's frames.
type generator struct {
	cfg    *genConfig
	r      *rand.Rand
	tokens [32]string // recent tokens granted, so that some releases match
	ntok   int
}

func newGenerator(cfg *genConfig, seed uint64, i int) *generator {
	return &generator{cfg: cfg, r: rand.New(rand.NewPCG(seed, uint64(i)+1000))}
}

// makeJunkPool returns the junk names: printable, 1 to 40 bytes.
func makeJunkPool(seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 99))
	out := make([]string, 300)
	for i := range out {
		out[i] = randBytes(r, 1+r.IntN(40), true)
	}
	return out
}

// randBytes returns n random bytes, never LF: printable ASCII or any byte.
func randBytes(r *rand.Rand, n int, printable bool) string {
	b := make([]byte, n)
	for i := range b {
		if printable {
			b[i] = byte(0x21 + r.IntN(0x7e-0x21+1))
		} else if b[i] = byte(r.IntN(256)); b[i] == '\n' {
			b[i] = 'x'
		}
	}
	return string(b)
}

// frame appends the lines of one random frame to dst.
func (g *generator) frame(dst []string) ([]string, frameKind) {
	r := g.r
	if r.Float64() < g.cfg.misalign {
		for range 1 + r.IntN(2) {
			dst = append(dst, randBytes(r, r.IntN(20), true))
		}
		return dst, misalignedFrame
	}
	if r.Float64() < g.cfg.junk {
		c := randBytes(r, r.IntN(12), r.IntN(3) > 0)
		if r.IntN(4) == 0 {
			c = strings.ToUpper(g.cfg.cmds[r.IntN(len(g.cfg.cmds))]) // near miss
		}
		if r.IntN(8) == 0 {
			c += "\r" // trailing CR: stripped by some profiles, kept by others
		}
		return append(dst, c, g.key(), randBytes(r, r.IntN(30), r.IntN(2) == 0)), junkFrame
	}
	cmd := g.cfg.cmds[r.IntN(len(g.cfg.cmds))]
	var key string
	switch cmd {
	case "listen", "unlisten", "watch", "unwatch":
		key = g.pattern()
	case "auth", "ping", "stats", "barrier":
		key = "_"
	case "stable-ref":
		key = "ref" + strconv.Itoa(r.IntN(100))
	default:
		key = g.key()
	}
	return append(dst, cmd, key, g.arg(cmd)), validFrame
}

// noteToken remembers the token of a grant reply ("ok <token> <lease> …").
func (g *generator) noteToken(reply string) {
	f := strings.Fields(reply)
	if len(f) >= 3 && (f[0] == "ok" || f[0] == "acquired") && len(f[1]) == 32 {
		g.tokens[g.ntok%len(g.tokens)] = f[1]
		g.ntok++
	}
}

func (g *generator) key() string {
	r := g.r
	switch p := r.Float64(); {
	case p < 0.72:
		return "k" + strconv.Itoa(r.IntN(g.cfg.keys))
	case p < 0.94:
		return fmt.Sprintf("ch.%d.%d", r.IntN(g.cfg.chans), r.IntN(g.cfg.chans))
	case p < 0.98:
		return g.cfg.junkPool[r.IntN(len(g.cfg.junkPool))]
	default:
		return invalidKeys[r.IntN(len(invalidKeys))]
	}
}

func (g *generator) pattern() string {
	r := g.r
	if r.Float64() >= g.cfg.wild {
		return g.key()
	}
	switch n := r.IntN(10); {
	case n < len(wildcards):
		return wildcards[n]
	case n < 8:
		return fmt.Sprintf("ch.%d.*", r.IntN(g.cfg.chans))
	default:
		return fmt.Sprintf("ch.*.%d", r.IntN(g.cfg.chans))
	}
}

func (g *generator) val() string {
	if g.r.IntN(3) == 0 {
		return "v" + strconv.Itoa(g.r.IntN(20)) // a small pool, so that kcas sometimes matches
	}
	return randBytes(g.r, 1+g.r.IntN(24), true)
}

// timeout is mostly 0 and at most 1 s, well under -blockwait.
func (g *generator) timeout() string {
	if g.r.IntN(10) < 7 {
		return "0"
	}
	return "1"
}

func (g *generator) optLease() string {
	if g.r.IntN(5) < 2 {
		return ""
	}
	return " " + strconv.Itoa(1+g.r.IntN(60))
}

func (g *generator) token() string {
	r := g.r
	switch p := r.Float64(); {
	case p < 0.5 && g.ntok > 0:
		return g.tokens[r.IntN(min(g.ntok, len(g.tokens)))]
	case p < 0.85:
		return fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64())
	default:
		return g.cfg.junkPool[r.IntN(len(g.cfg.junkPool))]
	}
}

func (g *generator) badArg() string {
	r := g.r
	switch r.IntN(6) {
	case 0:
		return ""
	case 1:
		return "-1"
	case 2:
		return "abc"
	case 3:
		return "1 2 3 4"
	case 4:
		return "99999999999999999999"
	default:
		return randBytes(r, r.IntN(30), r.IntN(2) == 0)
	}
}

// arg returns cmd's argument line: valid, or 12 % of the time invalid.
func (g *generator) arg(cmd string) string {
	r := g.r
	if r.Float64() < 0.12 {
		return g.badArg()
	}
	switch cmd {
	case "l", "rl", "wl", "elect":
		return g.timeout() + g.optLease()
	case "r", "rr", "wr", "resign", "sr":
		return g.token()
	case "n", "sn", "rn", "wn":
		return g.token() + g.optLease()
	case "e", "re", "we":
		return strings.TrimSpace(g.optLease())
	case "w", "sw", "rw", "ww", "blpop", "brpop":
		return g.timeout()
	case "sl":
		return g.timeout() + " " + strconv.Itoa(1+r.IntN(4)) + g.optLease()
	case "se":
		return strconv.Itoa(1+r.IntN(4)) + g.optLease()
	case "incr", "decr":
		return strconv.Itoa(r.IntN(21) - 10)
	case "cset":
		return strconv.Itoa(r.IntN(100) - 10)
	case "kset":
		if r.IntN(2) == 0 {
			return g.val()
		}
		return g.val() + "\t" + strconv.Itoa(r.IntN(30))
	case "kcas":
		old, ttl := "", ""
		if r.IntN(3) > 0 {
			old = g.val()
		}
		if r.IntN(2) == 0 {
			ttl = strconv.Itoa(1 + r.IntN(30))
		}
		return old + "\t" + g.val() + "\t" + ttl
	case "lpush", "rpush", "signal":
		return g.val()
	case "lrange":
		if r.IntN(2) == 0 {
			return "0 -1"
		}
		return strconv.Itoa(r.IntN(11)-5) + " " + strconv.Itoa(r.IntN(11)-5)
	case "listen", "unlisten":
		if r.IntN(4) == 0 {
			return "g" + strconv.Itoa(r.IntN(4)) // a queue group
		}
		return ""
	case "bwait":
		return strconv.Itoa(1+r.IntN(4)) + " " + g.timeout()
	case "auth":
		return randBytes(r, 1+r.IntN(20), true)
	}
	return "_"
}
