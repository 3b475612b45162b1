//go:build !race

package engine

import "testing"

// A warm Match allocates nothing: the trie is walked with m[string(b)]
// lookups and results land in the caller's reused Matches. Cases cover
// one node, several nodes with deduplication (linear and hashed), queue
// groups, and a channel nobody listens to.
func TestSublistMatchDoesNotAllocate(t *testing.T) {
	l := NewSublist()
	ss := newSessions(200)
	for i, s := range ss {
		mustSub(t, l, s, "orders.eu.new", "")
		if i%2 == 0 {
			mustSub(t, l, s, "orders.*.new", "") // multi-pattern: dedup path
			mustSub(t, l, s, "orders.>", "")
		}
		if i%10 == 0 {
			mustSub(t, l, s, "orders.>", "workers")
		}
	}
	mustSub(t, l, ss[0], "jobs.42", "")
	var m Matches
	for _, ch := range []string{"orders.eu.new", "orders.us.new", "jobs.42", "nobody.here"} {
		channel := []byte(ch)
		l.Match(channel, &m) // warm the scratch slices and map
		if n := testing.AllocsPerRun(200, func() { l.Match(channel, &m) }); n != 0 {
			t.Errorf("Match(%q) allocates %.1f times", ch, n)
		}
	}
	if n := testing.AllocsPerRun(200, func() { _ = l.Len() }); n != 0 {
		t.Errorf("Len allocates %.1f times", n)
	}
}
