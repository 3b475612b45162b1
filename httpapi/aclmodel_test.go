package httpapi

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dflockd-ng/dflockd/internal/policyref"
	"github.com/dflockd-ng/dflockd/policy"
	"github.com/dflockd-ng/dflockd/session"
)

// The policy model test over HTTP: random policies and random calls of
// the routes that name a key, each answer checked against a naive
// reference of the policy's definition (internal/policyref; the class of
// each route is this test's own table, from docs/sharing.md): 403 forbidden if
// and only if the reference denies.

// httpModelRoutes: method, path (with %s for the key), class, body.
var httpModelRoutes = []struct {
	method, path, class string
	body                any
}{
	{"POST", "/v1/locks/%s", "lock", map[string]int64{"acquire_timeout_s": 0}},
	{"POST", "/v1/locks/%s/release", "lock", map[string]string{"token": "0123456789abcdef0123456789abcdef"}},
	{"POST", "/v1/locks/%s/renew", "lock", map[string]string{"token": "0123456789abcdef0123456789abcdef"}},
	{"POST", "/v1/locks/%s/enqueue", "lock", map[string]any{}},
	{"POST", "/v1/locks/%s/wait", "lock", map[string]int64{"wait_timeout_s": 0}},
	{"POST", "/v1/semaphores/%s", "lock", map[string]int64{"acquire_timeout_s": 0, "limit": 2}},
	{"POST", "/v1/semaphores/%s/release", "lock", map[string]string{"token": "0123456789abcdef0123456789abcdef"}},
	{"POST", "/v1/signals/%s", "signal", map[string]string{"payload": "p"}},
	{"GET", "/v1/keys/%s", "observe", nil},
	{"POST", "/v1/admin/locks/%s/release", "admin", map[string]any{}},
}

func TestPolicyModelHTTP(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 3))
	const alphabet = "ab."
	randKey := func(max int) string {
		b := make([]byte, 1+r.IntN(max))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	cases, refused := 0, 0
	for range 200 {
		rules, text := policyref.Random(r, 6, randKey, "")
		p, err := policy.Parse([]byte(text))
		if err != nil {
			t.Fatalf("%v\n%s", err, text)
		}
		ts := newServer(t, setup{sess: session.Config{Policy: p}, cfg: Config{AdminToken: "adm"}})
		cr := ts.send(req{method: "POST", path: "/v1/sessions", header: bearer("tok-m")})
		var s sessionReply
		cr.decode(t, &s)
		for range 25 {
			rt := httpModelRoutes[r.IntN(len(httpModelRoutes))]
			key := randKey(4)
			if strings.Trim(key, ".") == "" || key == ".." {
				continue // not a path segment a mux routes
			}
			h := bearer("tok-m")
			h[adminHeader] = "adm"
			rep := ts.send(req{method: rt.method, path: fmt.Sprintf(rt.path, key), body: rt.body, session: s.SessionID, header: h})
			want := policyref.Allows(rules, rt.class, key)
			cases++
			if (rep.status == 403) == want {
				t.Fatalf("%s %s → %d %s, the reference says allowed=%v; policy:\n%s", rt.method, fmt.Sprintf(rt.path, key),
					rep.status, rep.body, want, text)
			}
			if !want {
				refused++
			}
			if rep.status == 200 && strings.Contains(string(rep.body), `"token"`) {
				var g grant
				rep.decode(t, &g)
				ts.send(req{method: "POST", path: fmt.Sprintf("/v1/locks/%s/release", key), body: map[string]string{"token": g.Token},
					session: s.SessionID, header: h})
			}
		}
	}
	t.Logf("%d HTTP calls agreed with the reference (%d refused)", cases, refused)
}
