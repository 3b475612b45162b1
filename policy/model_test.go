package policy

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// refDecide is the policy's definition, naively: among the identity's
// rules that name c and cover key, the longest decides (an exact one over
// a prefix one of the same literal); none denies.
func refDecide(rules []rule, c Class, key string) bool {
	var best *rule
	for i := range rules {
		r := &rules[i]
		if !r.classes.Has(c) || !r.pat.covers([]byte(key)) {
			continue
		}
		if best == nil || len(r.pat.Lit) > len(best.pat.Lit) || len(r.pat.Lit) == len(best.pat.Lit) && !r.pat.Prefix {
			best = r
		}
	}
	return best != nil && best.allow
}

// refAllUnder: every key that starts with lit is allowed (lit itself
// too: a '*' token may match an empty one, "a.*" matching "a.").
// The decision is constant between rule literals, so checking, for each
// rule literal L under lit, L itself and L followed by a byte no rule
// uses, and lit followed by that byte, checks every key.
func refAllUnder(rules []rule, c Class, lit string) bool {
	const fresh = "\x01"
	keys := []string{lit, lit + fresh}
	for _, r := range rules {
		if len(r.pat.Lit) > len(lit) && strings.HasPrefix(r.pat.Lit, lit) {
			keys = append(keys, r.pat.Lit, r.pat.Lit+fresh)
		}
	}
	for _, k := range keys {
		if !refDecide(rules, c, k) {
			return false
		}
	}
	return true
}

const alphabet = "ab./"

func randLit(r *rand.Rand, max int) string {
	n := r.IntN(max + 1)
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

func randRules(r *rand.Rand) []rule {
	n := r.IntN(12)
	var rules []rule
	seen := map[Pattern]bool{}
	for len(rules) < n {
		lit := randLit(r, 5)
		pat := Pattern{Lit: lit, Prefix: r.IntN(2) == 0}
		pat.Text = pat.Lit
		if pat.Prefix {
			pat.Text += "*"
		}
		if seen[Pattern{Lit: pat.Lit, Prefix: pat.Prefix, Text: pat.Text}] {
			continue
		}
		seen[pat] = true
		rules = append(rules, rule{pat: pat, classes: Classes(r.IntN(int(AllClasses) + 1)), allow: r.IntN(3) > 0, line: len(rules) + 1})
	}
	return rules
}

// TestMatcherAgainstReference: random rule sets and keys, the trie against
// the naive definition, for every class; and pattern subscriptions against
// "every key under the literal part".
func TestMatcherAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := 0
	for range 3000 {
		rules := randRules(r)
		id := &Identity{Name: "t", rules: rules, m: newMatcher(rules)}
		for range 40 {
			key := randLit(r, 7)
			for c := Class(0); c < numClasses; c++ {
				cases++
				if got, want := id.Allows(c, []byte(key)), refDecide(rules, c, key); got != want {
					t.Fatalf("Allows(%v, %q) = %v, reference %v; rules:\n%s", c, key, got, want, dumpRules(rules))
				}
				if got, why := id.Explain(c, []byte(key), false); got != refDecide(rules, c, key) {
					t.Fatalf("Explain(%v, %q) = %v (%s), reference disagrees", c, key, got, why)
				}
				pat := key + ">"
				if !strings.HasSuffix(key, ".") && key != "" {
					pat = key + ".>"
				}
				lit, _ := literalPart([]byte(pat))
				if got, want := id.AllowsPattern(c, []byte(pat)), refAllUnder(rules, c, string(lit)); got != want {
					t.Fatalf("AllowsPattern(%v, %q) = %v, reference %v; rules:\n%s", c, pat, got, want, dumpRules(rules))
				}
			}
		}
	}
	t.Logf("%d cases agreed", cases)
}

// TestResumeAgainstReference: checks through one Resume, as a session
// makes them, agree with the naive definition: sequences of keys that
// often share their beginning (the same key again, a sibling, a longer or
// a shorter one), over two identities taking turns on the one Resume.
func TestResumeAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	cases, resumed, settled := 0, 0, 0
	for range 3000 {
		rulesA, rulesB := randRules(r), randRules(r)
		a := &Identity{Name: "a", rules: rulesA, m: newMatcher(rulesA)}
		b := &Identity{Name: "b", rules: rulesB, m: newMatcher(rulesB)}
		var res Resume
		key := randLit(r, 7)
		for range 60 {
			switch r.IntN(4) {
			case 0:
				key = randLit(r, 7)
			case 1: // a sibling: the last byte changed
				if key != "" {
					key = key[:len(key)-1] + string(alphabet[r.IntN(len(alphabet))])
				}
			case 2: // longer
				key += randLit(r, 3)
			case 3: // shorter
				key = key[:r.IntN(len(key)+1)]
			}
			id, rules := a, rulesA
			if r.IntN(5) == 0 {
				id, rules = b, rulesB
			}
			c := Class(r.IntN(int(numClasses)))
			if res.id == id && int(res.n) <= len(key) && key[:res.n] == string(res.buf[:res.n]) {
				resumed++
				if res.settled && res.class == c && int(res.n) < len(key) {
					settled++ // answered without a walk
				}
			}
			cases++
			if got, want := id.AllowsResume(c, []byte(key), &res), refDecide(rules, c, key); got != want {
				t.Fatalf("AllowsResume(%v, %q) = %v, reference %v; rules:\n%s", c, key, got, want, dumpRules(rules))
			}
		}
	}
	if resumed < cases/20 || settled < cases/400 {
		t.Fatalf("only %d of %d checks resumed a walk, %d answered as settled: the test does not exercise them", resumed, cases, settled)
	}
	t.Logf("%d cases agreed, %d of them resumed, %d of those answered as settled", cases, resumed, settled)
}

// TestPatternSoundness: when a subscription pattern is allowed, every
// channel it matches is allowed.
func TestPatternSoundness(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		rules := randRules(r)
		id := &Identity{Name: "t", rules: rules, m: newMatcher(rules)}
		pat := randPattern(r)
		for c := Class(0); c < numClasses; c++ {
			if !id.AllowsPattern(c, []byte(pat)) {
				continue
			}
			for range 30 {
				ch := instantiate(r, pat)
				if !id.Allows(c, []byte(ch)) {
					t.Fatalf("pattern %q allowed for %v but its channel %q is not; rules:\n%s", pat, c, ch, dumpRules(rules))
				}
			}
		}
	}
}

func randPattern(r *rand.Rand) string {
	var toks []string
	for n := 1 + r.IntN(4); len(toks) < n; {
		switch r.IntN(5) {
		case 0:
			toks = append(toks, "*")
		case 1:
			toks = append(toks, ">")
			n = len(toks)
		default:
			toks = append(toks, strings.ReplaceAll(randLit(r, 3), ".", "")+"a")
		}
	}
	return strings.Join(toks, ".")
}

func instantiate(r *rand.Rand, pat string) string {
	var out []string
	for _, tok := range strings.Split(pat, ".") {
		switch tok {
		case "*":
			out = append(out, strings.ReplaceAll(randLit(r, 3), ".", "")+"b")
		case ">":
			for n := 1 + r.IntN(3); n > 0; n-- {
				out = append(out, strings.ReplaceAll(randLit(r, 3), ".", "")+"b")
			}
		default:
			out = append(out, tok)
		}
	}
	return strings.Join(out, ".")
}

func dumpRules(rules []rule) string {
	var b bytes.Buffer
	for _, r := range rules {
		fmt.Fprintf(&b, "  %s\n", r.describe())
	}
	return b.String()
}

func TestLiteralPart(t *testing.T) {
	for _, tc := range []struct {
		in, lit string
		wild    bool
	}{
		{"a.b.>", "a.b.", true}, {"a.*.c", "a.", true}, {">", "", true}, {"*", "", true},
		{"a.b", "a.b", false}, {"a*.b", "a*.b", false}, {"a.b>", "a.b>", false}, {"", "", false},
	} {
		lit, wild := literalPart([]byte(tc.in))
		if string(lit) != tc.lit || wild != tc.wild {
			t.Errorf("literalPart(%q) = %q, %v; want %q, %v", tc.in, lit, wild, tc.lit, tc.wild)
		}
	}
}
