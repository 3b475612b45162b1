package loop

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/vocab"
)

// A profile is a server and the reply shapes that differ between the v2
// profile and --compat=rf (spec §B.0). A scenario is written once against
// a profile and run under both: TestX against plain, TestXRF against
// rfsrv. Where the profiles disagree on more than a reply's shape, the
// scenario branches on rf and asserts each side.
type profile struct {
	ts *testServer
	rf bool
}

func v2Profile() profile { return profile{ts: plain} }
func rfProfile() profile { return profile{ts: rfsrv, rf: true} }

// grant is the pattern of an ok grant with a lease of lease seconds: v2
// "ok T L", rf "ok T L F" with the token's own fence.
func (p profile) grant(lease int) string { return p.granted("ok", "T", lease) }

// acquired is the pattern of a two-phase fast-path grant.
func (p profile) acquired(lease int) string { return p.granted("acquired", "T", lease) }

// grantOf is the exact grant of a known token (w after an e fast path).
func (p profile) grantOf(tok string, lease int) string { return p.granted("ok", tok, lease) }

func (p profile) granted(status, tok string, lease int) string {
	s := fmt.Sprintf("%s %s %d", status, tok, lease)
	if p.rf {
		s += " F"
	}
	return s
}

// renewed is the reply to a renew of tok with a lease of lease seconds:
// v2 "ok L", rf "ok L <fence of tok>".
func (p profile) renewed(tok string, lease int) string {
	s := fmt.Sprintf("ok %d", lease)
	if p.rf {
		s += " " + fenceText(tok)
	}
	return s
}

func (p profile) dial(t *testing.T) *client {
	t.Helper()
	return dial(t, p.ts)
}

// stat reads a numeric field of the entry for key k in the stats array arr
// (0 when k is not listed or the field is omitted).
func stat(t *testing.T, ts *testServer, arr, k, field string) float64 {
	t.Helper()
	// The engine's whole state, in the rf document's shape: the v2 stats
	// reply shows locks and semaphores only.
	var doc map[string]any
	if err := json.Unmarshal(parse.AppendStats(nil, ts.eng.Stats(ts.srv.clock.Now(), 0), vocab.ProfileRF), &doc); err != nil {
		t.Fatal(err)
	}
	arrv, _ := doc[arr].([]any)
	for _, e := range arrv {
		if m := e.(map[string]any); m["key"] == k {
			v, _ := m[field].(float64)
			return v
		}
	}
	return 0
}

// roundTrip sends a request that raises no watch event and no signal in
// either profile and reads its reply: a push written before that reply
// would have been read instead.
func (c *client) roundTrip() {
	c.t.Helper()
	c.do("get", key("rt"), "", "ok 0")
}

func TestFenceInGrantsRF(t *testing.T) {
	// The patterns of the scenarios rely on match's F: check that it
	// rejects what a wrong fence would look like.
	tok := "00000000000000ff0123456789abcdef"
	for _, c := range []struct {
		got, want string
		ok        bool
	}{
		{"ok " + tok + " 30 255", "ok T 30 F", true},
		{"ok " + tok + " 30 254", "ok T 30 F", false},
		{"ok " + tok + " 30 0xff", "ok T 30 F", false},
		{"ok " + tok + " 30", "ok T 30 F", false},
		{"ok 30 255", "ok 30 F", false}, // no token before it
	} {
		if match(c.got, c.want) != c.ok {
			t.Errorf("match(%q, %q) = %v", c.got, c.want, !c.ok)
		}
	}
	// And that the rf server's fences are the token prefixes, increasing.
	c := dial(t, rfsrv)
	k := key("fence")
	t1 := c.do("l", k, "0 30", "ok T 30 F")[1]
	c.do("r", k, t1, "ok")
	t2 := c.do("l", k, "0 30", "ok T 30 F")[1]
	if t2[:16] <= t1[:16] {
		t.Fatalf("fence did not increase: %s then %s", t1, t2)
	}
	dial(t, plain).do("l", key("fence"), "0 30", "ok T 30") // v2: three fields
}

func TestPingRF(t *testing.T) {
	// dflockd's redis-feats line has no ping: unknown command, connection
	// kept (spec §B.13).
	c := dial(t, rfsrv)
	c.do("ping", "_", "_", "error")
	c.do("stats", "_", "_", "ok *")
	dial(t, plain).do("ping", "_", "_", "ok")
}
