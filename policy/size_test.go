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

// A parsed policy's memory per rule stays small: the tries are flat
// arrays. The bound is generous; the figure is logged.
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
	if perRule > 400 {
		t.Fatalf("%.0f B per rule, over 400", perRule)
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
