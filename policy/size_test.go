package policy

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// hundredRulePolicy is n identities of 100 rules each: the one that
// allows the identity's keys, 99 decoys (other prefixes, denies under the
// keys, exact keys beside them), as the suite's policy workload has them.
func hundredRulePolicy(n int) []byte {
	var b strings.Builder
	for id := range n {
		fmt.Fprintf(&b, "identity id-%d\n token %s\n allow lock,read,write bench-%d/*\n", id, TokenHash(fmt.Sprint("tok-", id)), id)
		for r := range 99 {
			switch r % 3 {
			case 0:
				fmt.Fprintf(&b, " allow lock other-%d-%d/*\n", id, r)
			case 1:
				fmt.Fprintf(&b, " deny write bench-%d/frozen-%d/*\n", id, r)
			default:
				fmt.Fprintf(&b, " allow read bench-%d-side-%d\n", id, r)
			}
		}
	}
	return []byte(b.String())
}

// A parsed policy's memory per rule stays small: the tries are one
// arena, and the rules and their text are packed once parsed (pack). The
// figure is logged; 96 B leaves room for the runtime's rounding, and
// fails if a rule keeps its line's string alive again (108 B).
func TestPolicyMemoryPerRule(t *testing.T) {
	src := hundredRulePolicy(50)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perRule := float64(after.HeapAlloc-before.HeapAlloc) / 5000
	runtime.KeepAlive(p)
	t.Logf("50 identities × 100 rules: %.0f B per rule live", perRule)
	if perRule > 96 {
		t.Fatalf("%.0f B per rule, over 96", perRule)
	}
}

// BenchmarkAllows is one check on an identity of 100 rules.
func BenchmarkAllows(b *testing.B) {
	p, err := Parse(hundredRulePolicy(1))
	if err != nil {
		b.Fatal(err)
	}
	id := p.Identity("id-0")
	key := []byte("bench-0/key-17")
	b.ReportAllocs()
	for b.Loop() {
		if !id.Allows(Lock, key) {
			b.Fatal("denied")
		}
	}
}

// BenchmarkAllowsRotating is one check per iteration as a server with
// many tenants makes them: each on the next of 500 identities of 100
// rules (about 50,000 rules), on one of 16 keys of that identity's, so
// that the tries are seldom in the cache, as between the requests of a
// busy server. The layout of the trie in memory, not the walk's
// instructions, is what this measures.
func BenchmarkAllowsRotating(b *testing.B) {
	const ids, keys = 500, 16
	p, err := Parse(hundredRulePolicy(ids))
	if err != nil {
		b.Fatal(err)
	}
	idents := make([]*Identity, ids)
	keyOf := make([][][]byte, ids)
	for i := range idents {
		idents[i] = p.Identity(fmt.Sprint("id-", i))
		for k := range keys {
			keyOf[i] = append(keyOf[i], fmt.Appendf(nil, "bench-%d/s%d", i, k))
		}
	}
	for _, resume := range []bool{false, true} {
		name := "root"
		if resume {
			name = "resume" // one Resume per identity, as each session has
		}
		b.Run(name, func(b *testing.B) {
			res := make([]Resume, ids)
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				i := n % ids
				key := keyOf[i][(n/ids)%keys]
				ok := false
				if resume {
					ok = idents[i].AllowsResume(Lock, key, &res[i])
				} else {
					ok = idents[i].Allows(Lock, key)
				}
				if !ok {
					b.Fatal("denied")
				}
				n += 7 // a stride, so that neighbours in memory are not next
			}
		})
	}
}
