// Package policyref is a naive reference of the policy's definition, for
// the model tests of the transports (session, httpapi): written from the
// README's words, not from package policy's code, so that a test which
// compares the two catches a mistake in either. It is slow on purpose:
// every rule is compared for every decision.
package policyref

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/dflockd-ng/dflockd/policy"
)

// Rule is an allow or deny line: classes (or "*"), a pattern (*,
// prefix*, or one key).
type Rule struct {
	Classes []string
	Allow   bool
	Pattern string
}

// Classes are the class names a policy file knows.
var Classes = []string{"lock", "read", "write", "signal", "listen", "observe", "admin", "metrics"}

// covers: the rule's pattern covers key (a literal key), how long its
// literal is, and whether it is one key.
func (r Rule) covers(key string) (ok bool, length int, exact bool) {
	if r.Pattern == "*" {
		return true, 0, false
	}
	if p, prefix := strings.CutSuffix(r.Pattern, "*"); prefix {
		return strings.HasPrefix(key, p), len(p), false
	}
	return key == r.Pattern, len(r.Pattern), true
}

// Names reports whether the rule names class.
func (r Rule) Names(class string) bool {
	for _, c := range r.Classes {
		if c == class || c == "*" {
			return true
		}
	}
	return false
}

// Allows is the definition: among the rules that name class and cover
// key, the longest pattern decides (one key over a prefix of the same
// text); none denies.
func Allows(rules []Rule, class, key string) bool {
	best, bestLen, bestExact := -1, -1, false
	for i, r := range rules {
		ok, l, exact := r.covers(key)
		if !ok || !r.Names(class) {
			continue
		}
		if l > bestLen || l == bestLen && exact && !bestExact {
			best, bestLen, bestExact = i, l, exact
		}
	}
	return best >= 0 && rules[best].Allow
}

// AllowsPattern: every key a NATS-style subscription pattern can match
// is allowed. Keys drawn from alphabet are checked up to depth bytes past
// the pattern's literal part, which covers every rule of a model test
// whose literals are shorter than that.
func AllowsPattern(rules []Rule, class, pattern, alphabet string, depth int) bool {
	var lit []string
	wild := false
	for _, t := range strings.Split(pattern, ".") {
		if t == "*" || t == ">" {
			wild = true
			break
		}
		lit = append(lit, t)
	}
	if !wild {
		return Allows(rules, class, pattern)
	}
	prefix := strings.Join(lit, ".")
	if len(lit) > 0 {
		prefix += "."
	}
	ok := true
	var walk func(k string, n int)
	walk = func(k string, n int) {
		if !ok {
			return
		}
		if !Allows(rules, class, k) {
			ok = false
			return
		}
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			walk(k+string(c), n-1)
		}
	}
	walk(prefix, depth)
	return ok
}

// Random makes up to max rules of random patterns (from randKey) and
// classes, with no class named twice for one pattern (a file that does is
// refused), and the policy file of one identity "m" (token "tok-m", and
// extra lines after its identity line) that holds them.
func Random(r *rand.Rand, max int, randKey func(max int) string, extra string) ([]Rule, string) {
	var rules []Rule
	var b strings.Builder
	b.WriteString("identity m\n token " + policy.TokenHash("tok-m") + "\n" + extra)
	used := map[string]map[string]bool{} // pattern → classes named
	for n := r.IntN(max + 1); len(rules) < n; {
		pat := "*"
		switch r.IntN(4) {
		case 0:
		case 1:
			pat = randKey(3)
		default:
			pat = randKey(3) + "*"
		}
		var classes []string
		for _, c := range Classes {
			if r.IntN(3) == 0 && !used[pat][c] {
				classes = append(classes, c)
			}
		}
		if len(classes) == 0 {
			continue
		}
		if used[pat] == nil {
			used[pat] = map[string]bool{}
		}
		for _, c := range classes {
			used[pat][c] = true
		}
		rule := Rule{Classes: classes, Allow: r.IntN(3) > 0, Pattern: pat}
		rules = append(rules, rule)
		verb := "deny"
		if rule.Allow {
			verb = "allow"
		}
		fmt.Fprintf(&b, " %s %s %s\n", verb, strings.Join(classes, ","), pat)
	}
	return rules, b.String()
}
