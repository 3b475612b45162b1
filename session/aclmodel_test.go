package session

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/internal/policyref"
	"github.com/dflockd-ng/dflockd/policy"
	"github.com/dflockd-ng/dflockd/vocab"
)

// The policy model test: random policies and random requests through the
// line protocol's sessions (each profile) and the godistlock codec, each
// reply checked against a naive reference of the policy's definition
// (internal/policyref): refused (error_denied, godistlock's NO) if and
// only if the reference denies. The class of each command is this test's
// own table, from docs/sharing.md.

// modelAlphabet is what the model's keys and patterns are made of.
const modelAlphabet = "ab/."

// modelClass is docs/sharing.md's table of classes, by command.
var modelClass = map[string]string{
	"l": "lock", "r": "lock", "n": "lock", "e": "lock", "w": "lock", "sl": "lock", "sr": "lock", "sn": "lock",
	"se": "lock", "sw": "lock", "rl": "lock", "wl": "lock", "rr": "lock", "wr": "lock", "rn": "lock", "wn": "lock",
	"re": "lock", "we": "lock", "rw": "lock", "ww": "lock", "elect": "lock", "resign": "lock",
	"get": "read", "kget": "read", "llen": "read", "lrange": "read", "observe": "read", "watch": "read",
	"incr": "write", "decr": "write", "cset": "write", "kset": "write", "kdel": "write", "kcas": "write",
	"lpush": "write", "rpush": "write", "lpop": "write", "rpop": "write", "blpop": "write", "brpop": "write",
	"bwait": "write", "signal": "signal", "listen": "listen",
}

// modelArg is an argument each command accepts (blocking ones do not
// wait: timeout 0), so a refusal is the only error_denied.
var modelArg = map[string]string{
	"l": "0 5", "r": "0123456789abcdef0123456789abcdef", "n": "0123456789abcdef0123456789abcdef", "e": "5", "w": "0",
	"sl": "0 5 3", "sr": "0123456789abcdef0123456789abcdef", "sn": "0123456789abcdef0123456789abcdef", "se": "5 3", "sw": "0",
	"rl": "0 5", "wl": "0 5", "rr": "0123456789abcdef0123456789abcdef", "wr": "0123456789abcdef0123456789abcdef",
	"rn": "0123456789abcdef0123456789abcdef", "wn": "0123456789abcdef0123456789abcdef", "re": "5", "we": "5", "rw": "0", "ww": "0",
	"elect": "0 5", "resign": "0123456789abcdef0123456789abcdef",
	"get": "_", "kget": "_", "llen": "_", "lrange": "0 -1", "observe": "_", "watch": "_",
	"incr": "1", "decr": "1", "cset": "3", "kset": "v", "kdel": "_", "kcas": "\tnew\t0", "lpush": "v", "rpush": "v",
	"lpop": "_", "rpop": "_", "blpop": "0", "brpop": "0", "bwait": "2 0", "signal": "hi", "listen": "_",
}

func randModelKey(r *rand.Rand, max int) string {
	n := 1 + r.IntN(max)
	b := make([]byte, n)
	for i := range b {
		b[i] = modelAlphabet[r.IntN(len(modelAlphabet))]
	}
	return string(b)
}

func TestPolicyModelLineProtocol(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 1))
	commands := make([]string, 0, len(modelClass))
	for c := range modelClass {
		commands = append(commands, c)
	}
	cases, refused := 0, 0
	for _, profile := range []vocab.Profile{vocab.ProfileV2, vocab.ProfileRF, vocab.ProfileV1} {
		for range 150 {
			rules, text := policyref.Random(r, 7, func(n int) string { return randModelKey(r, n) }, "")
			p, err := policy.Parse([]byte(text))
			if err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			fs := newFakeServer(t, Config{Policy: p, Profile: profile, ReadTimeout: time.Minute}, engine.Config{})
			c := fs.open()
			if got := fs.traffic(c, request("auth", "_", "tok-m")); got != "ok\n" {
				t.Fatal(got)
			}
			for range 40 {
				cmd := commands[r.IntN(len(commands))]
				if !profile.Knows(vocab.Named([]byte(cmd))) {
					continue
				}
				key := randModelKey(r, 4)
				class := modelClass[cmd]
				var want bool
				if cmd == "watch" || cmd == "listen" {
					if r.IntN(2) == 0 {
						key = strings.TrimSuffix(key, ".") + ".>"
					}
					want = policyref.AllowsPattern(rules, class, key, modelAlphabet, 4)
				} else {
					want = policyref.Allows(rules, class, key)
				}
				got := fs.traffic(c, request(cmd, key, modelArg[cmd]))
				cases++
				if (got == "error_denied\n") == want {
					t.Fatalf("%s: %s %q → %q, the reference says allowed=%v; policy:\n%s", profile, cmd, key, got, want, text)
				}
				if !want {
					refused++
				}
				if strings.HasPrefix(got, "ok") && (cmd == "watch" || cmd == "listen") {
					fs.traffic(c, request("un"+cmd, key, "_"))
				}
			}
			// stats: allowed iff observe is allowed on some key.
			st := fs.traffic(c, request("stats", "_", "_"))
			some := false
			for _, rule := range rules {
				some = some || rule.Allow && rule.Names("observe")
			}
			if (st == "error_denied\n") == some {
				t.Fatalf("stats → %q, want allowed=%v; policy:\n%s", st, some, text)
			}
			cases++
		}
	}
	t.Logf("%d requests agreed with the reference (%d refused)", cases, refused)
}

// godistlock: ON, TRY, REFRESH, OFF, IS on random keys through a session
// whose identity came from a client certificate.
func TestPolicyModelGodistlock(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 2))
	cases := 0
	for range 300 {
		rules, text := policyref.Random(r, 7, func(n int) string { return randModelKey(r, n) }, "")
		text = strings.Replace(text, "identity m\n", "identity m\n cert m.clients\n", 1)
		p, err := policy.Parse([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		fs := newFakeServer(t, Config{Policy: p, ReadTimeout: time.Minute}, engine.Config{})
		c := fs.openCertified("m.clients")
		if got := fs.traffic(c, "HELLO 1 h\n"); !strings.HasPrefix(got, "HELLO h ") {
			t.Fatalf("HELLO: %q", got)
		}
		for i := range 30 {
			key := randModelKey(r, 4)
			op, class := "TRY", "lock"
			switch r.IntN(4) {
			case 1:
				op = "OFF"
			case 2:
				op, class = "IS", "read"
			case 3:
				op = "REFRESH"
			}
			line := fmt.Sprintf("%s %s 5000 n%d\n", op, key, i)
			switch op {
			case "OFF", "IS":
				line = fmt.Sprintf("%s %s n%d\n", op, key, i)
			case "REFRESH":
				line = fmt.Sprintf("%s %s 5000 7 n%d\n", op, key, i)
			}
			got := fs.traffic(c, line)
			want := policyref.Allows(rules, class, key)
			denied := got == fmt.Sprintf("NO n%d\n", i)
			cases++
			switch {
			case !want && !denied:
				t.Fatalf("%q → %q, the reference refuses it; policy:\n%s", line, got, text)
			case want && op == "TRY" && !strings.HasPrefix(got, "GIVE"):
				t.Fatalf("%q → %q, the reference allows it (a free key); policy:\n%s", line, got, text)
			}
			if strings.HasPrefix(got, "GIVE") {
				fs.traffic(c, fmt.Sprintf("OFF %s x%d\n", key, i))
			}
		}
	}
	t.Logf("%d godistlock requests agreed with the reference", cases)
}
