package policy

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"strings"
	"testing"
)

var teamA = TokenHash("secret-a")

const twoTeams = `# two teams and an operator
identity team-a
  token %A
  allow lock,read,write team-a/*
  deny  write           team-a/frozen/*
  allow listen          team-a.*
  deny  listen          team-a.secret.*
  quota locks=10 waiters=5 keys=100 conns=4 rate=50

identity team-b          # B: a certificate, no token
  cert team-b.clients.example
  allow * team-b/*

identity ops
  token %O
  allow observe,admin,metrics *
`

func twoTeamsPolicy(t *testing.T) *Policy {
	t.Helper()
	src := strings.NewReplacer("%A", teamA, "%O", TokenHash("secret-ops")).Replace(twoTeams)
	p, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseTwoTeams(t *testing.T) {
	p := twoTeamsPolicy(t)
	if len(p.Identities()) != 3 || len(p.Version) != 16 {
		t.Fatalf("identities %d, version %q", len(p.Identities()), p.Version)
	}
	a := p.ByToken([]byte("secret-a"))
	if a == nil || a.Name != "team-a" || a.Index != 0 {
		t.Fatalf("ByToken(secret-a) = %+v", a)
	}
	if p.ByToken([]byte("secret-b")) != nil || p.ByToken(nil) != nil {
		t.Fatal("an unknown token found an identity")
	}
	if a.Quota != (Quota{Locks: 10, Waiters: 5, Keys: 100, Conns: 4, Rate: 50}) {
		t.Fatalf("quota %+v", a.Quota)
	}
	for _, tc := range []struct {
		c       Class
		key     string
		pattern bool
		want    bool
	}{
		{Lock, "team-a/job", false, true},
		{Lock, "team-b/job", false, false},
		{Write, "team-a/x", false, true},
		{Write, "team-a/frozen/x", false, false},
		{Read, "team-a/frozen/x", false, true},
		{Signal, "team-a.x", false, false},
		{Listen, "team-a.>", true, false}, // team-a.secret. is under it
		{Listen, "team-a.public.>", true, true},
		{Listen, "team-a.*.x", true, false},
		{Listen, "team-a.secret", true, true}, // no wildcard: that one channel
		{Listen, ">", true, false},
		{Listen, "team-a", true, false},
		{Read, "team-a/*", true, true},
		{Read, "team-a/frozen.>", true, true},
		{Write, "team-a/.>", true, true},
		{Write, "team-a/frozen/.>", true, false},
		{Observe, "team-a/job", false, false},
	} {
		var got bool
		if tc.pattern {
			got = a.AllowsPattern(tc.c, []byte(tc.key))
		} else {
			got = a.Allows(tc.c, []byte(tc.key))
		}
		if got != tc.want {
			_, why := a.Explain(tc.c, []byte(tc.key), tc.pattern)
			t.Errorf("team-a %v %q (pattern %v) = %v, want %v (%s)", tc.c, tc.key, tc.pattern, got, tc.want, why)
		}
	}
	b := p.ByCertificate(&x509.Certificate{Subject: pkix.Name{CommonName: "someone"}, DNSNames: []string{"team-b.clients.example"}})
	if b == nil || b.Name != "team-b" {
		t.Fatalf("ByCertificate by SAN = %v", b)
	}
	if p.ByCertificate(&x509.Certificate{Subject: pkix.Name{CommonName: "team-a"}}) != nil {
		t.Fatal("a certificate named an identity that lists no cert")
	}
	ops := p.Identity("ops")
	if !ops.AllowsSome(Observe) || ops.AllowsSome(Lock) || !ops.Allows(Metrics, nil) {
		t.Fatal("ops: observe/admin/metrics on everything, nothing else")
	}
	_, why := a.Explain(Write, []byte("team-a/frozen/x"), false)
	if !strings.Contains(why, "line 5: deny write team-a/frozen/*") {
		t.Fatalf("Explain names %q", why)
	}
}

func TestParseErrors(t *testing.T) {
	h := TokenHash("x")
	for _, tc := range []struct{ src, want string }{
		{"allow * *", `line 1: "allow" before the first identity line`},
		{"identity a\nidentity a", `line 2: identity "a" is already defined on line 1`},
		{"identity a\n  token hunter2", "line 2: a token is stored as sha256:<64 hex digits>"},
		{"identity a\n  token sha256:abcd", "line 2: a token is stored as sha256"},
		{"identity a\n token " + h + "\nidentity b\n token " + h, `line 4: this token is already identity "a"'s`},
		{"identity a\n  allow lock,read x/*\n  deny read x/*", `line 3: pattern "x/*" names a class that the rule on line 2 names`},
		{"identity a\n  allow lock,rread x", `line 2: unknown class "rread"`},
		{"identity a\n  allw lock x", `line 2: unknown statement "allw"`},
		{"identity a\n  quota locks=1 locks=2", `line 2: quota "locks" is already set on line 2`},
		{"identity a\n  quota lock=1", `line 2: unknown quota "lock"`},
		{"identity a\n  quota locks=-1", `line 2: quota "locks=-1"`},
		{"identity a b", "line 1: want `identity NAME`"},
		{"identity a/b", `line 1: identity name "a/b"`},
		{"identity a\n cert x\nidentity b\n cert x", `line 4: certificate name "x" is already identity "a"'s`},
		{"identity a\n allow lock", "line 2: want `allow CLASSES PATTERN`"},
	} {
		_, err := Parse([]byte(tc.src))
		if err == nil || !errors.Is(err, ErrPolicy) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.src, err, tc.want)
		}
	}
}

func TestEqualPatternsDifferOnlyInExactness(t *testing.T) {
	// "x/*" and "x/" are different patterns: a prefix and one key.
	p, err := Parse([]byte("identity a\n allow lock x/*\n deny lock x/\n"))
	if err != nil {
		t.Fatal(err)
	}
	id := p.Identity("a")
	if id.Allows(Lock, []byte("x/")) || !id.Allows(Lock, []byte("x/y")) {
		t.Fatal("the exact deny must win on x/ only")
	}
}

func TestEveryoneAndNobody(t *testing.T) {
	e := Everyone("auth-token")
	if !e.Allows(Admin, []byte("k")) || !e.AllowsPattern(Listen, []byte(">")) || !e.AllowsSome(Lock) {
		t.Fatal("Everyone must allow everything")
	}
	if Nobody.Allows(Lock, []byte("k")) || Nobody.AllowsPattern(Listen, []byte(">")) || Nobody.AllowsSome(Observe) {
		t.Fatal("Nobody must allow nothing")
	}
}

// Equal patterns with different classes are one rule in two lines.
func TestEqualPatternsDisjointClasses(t *testing.T) {
	p, err := Parse([]byte("identity a\n allow lock x/*\n deny read x/*\n allow read x/pub/*\n"))
	if err != nil {
		t.Fatal(err)
	}
	id := p.Identity("a")
	if !id.Allows(Lock, []byte("x/1")) || id.Allows(Read, []byte("x/1")) || !id.Allows(Read, []byte("x/pub/1")) {
		t.Fatal("allow lock and deny read on one pattern")
	}
}
