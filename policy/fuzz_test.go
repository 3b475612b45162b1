package policy

import (
	"strings"
	"testing"
)

// FuzzParse: any file either fails with ErrPolicy naming a line, or
// parses into identities whose trie agrees with the naive definition on
// keys made from the file's own patterns.
func FuzzParse(f *testing.F) {
	f.Add([]byte(strings.NewReplacer("%A", teamA, "%O", teamA[:len(teamA)-1]+"0").Replace(twoTeams)))
	f.Add([]byte("identity a\n allow * *\n deny lock a*\n allow lock ab\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "policy: ") {
				t.Fatalf("error without the package's prefix: %v", err)
			}
			return
		}
		for _, id := range p.Identities() {
			if p.Identity(id.Name) != id {
				t.Fatalf("identity %q not found by name", id.Name)
			}
			for _, r := range id.rules {
				for _, key := range []string{r.pat.Lit, r.pat.Lit + "x", ""} {
					for c := Class(0); c < numClasses; c++ {
						if got, want := id.Allows(c, []byte(key)), refDecide(id.rules, c, key); got != want {
							t.Fatalf("%s: Allows(%v, %q) = %v, reference %v", id.Name, c, key, got, want)
						}
					}
				}
			}
		}
	})
}
