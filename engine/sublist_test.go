package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// refValidPattern and refMatch restate the pattern grammar of spec §B.9 as
// plainly as possible (split on '.', compare token by token); the trie is
// checked against them.
func refValidPattern(p string) bool {
	if p == "" {
		return false
	}
	toks := strings.Split(p, ".")
	for i, t := range toks {
		if t == ">" && i != len(toks)-1 {
			return false
		}
		if t != "*" && t != ">" && strings.ContainsAny(t, "*>") {
			return false
		}
	}
	return true
}

func refMatch(pattern, channel string) bool {
	p := strings.Split(pattern, ".")
	c := strings.Split(channel, ".")
	for i, t := range p {
		if t == ">" {
			return len(c) > i
		}
		if i >= len(c) || (t != "*" && t != c[i]) {
			return false
		}
	}
	return len(p) == len(c)
}

// newSessions returns the ids 1..n.
func newSessions(n int) []SessionID { return sessionsFrom(1, n) }

// sessionsFrom returns n ids from first on.
func sessionsFrom(first, n int) []SessionID {
	ss := make([]SessionID, n)
	for i := range ss {
		ss[i] = SessionID(uint64(first + i))
	}
	return ss
}

func mustSub(t *testing.T, l *Sublist, s SessionID, pattern, group string) {
	t.Helper()
	added, err := l.Subscribe(s, pattern, group)
	if err != nil || !added {
		t.Fatalf("Subscribe(%d, %q, %q) = %v, %v", uint64(s), pattern, group, added, err)
	}
}

func ids(ss []SessionID) []uint64 {
	out := make([]uint64, len(ss))
	for i, s := range ss {
		out[i] = uint64(s)
	}
	return out
}

func sortedIDs(ss []SessionID) []uint64 {
	out := ids(ss)
	slices.Sort(out)
	return out
}

func TestPatternValidation(t *testing.T) {
	tests := []struct {
		pattern string
		ok      bool
	}{
		{"a", true},
		{"a.b.c", true},
		{"*", true},
		{">", true},
		{"a.*", true},
		{"*.b", true},
		{"a.*.c", true},
		{"a.>", true},
		{"*.>", true},
		{"*.*.*", true},
		{"a..b", true}, // empty tokens are literal tokens, as in dflockd
		{".a", true},
		{"a.", true},
		{".", true},
		{"a.*.", true},
		{"lock:key-1/x", true},
		{"", false},
		{"fo*", false},
		{"*o", false},
		{"a>b", false},
		{">a", false},
		{"a.>.b", false},
		{">.a", false},
		{">.>", false},
		{"a.**", false},
		{"a.>>", false},
		{"a.b*.c", false},
		{"a.*>", false},
		{">.", false},
	}
	for _, tt := range tests {
		err := validPattern(tt.pattern)
		if (err == nil) != tt.ok {
			t.Errorf("validPattern(%q) = %v, want ok=%v", tt.pattern, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidPattern) {
			t.Errorf("validPattern(%q) = %v, want ErrInvalidPattern", tt.pattern, err)
		}
		if refValidPattern(tt.pattern) != tt.ok {
			t.Errorf("reference disagrees on %q", tt.pattern)
		}
		l := NewSublist()
		added, err := l.Subscribe(SessionID(1<<50), tt.pattern, "")
		if added != tt.ok || (err == nil) != tt.ok {
			t.Errorf("Subscribe(%q) = %v, %v, want ok=%v", tt.pattern, added, err, tt.ok)
		}
	}
}

func TestPatternValidChannel(t *testing.T) {
	tests := []struct {
		channel string
		ok      bool
	}{
		{"a", true},
		{"a.b.c", true},
		{"a..b", true},
		{".", true},
		{"", false},
		{"*", false},
		{">", false},
		{"a.*", false},
		{"a.>", false},
		{"fo*", false},
		{"a>b", false},
	}
	for _, tt := range tests {
		if got := validChannel([]byte(tt.channel)); got != tt.ok {
			t.Errorf("validChannel(%q) = %v, want %v", tt.channel, got, tt.ok)
		}
	}
}

func TestSublistMatchSemantics(t *testing.T) {
	tests := []struct {
		pattern string
		match   []string
		miss    []string
	}{
		{"foo", []string{"foo"}, []string{"fo", "foo.bar", "bar.foo", "foox", "Foo"}},
		{"a.b.c", []string{"a.b.c"}, []string{"a.b", "a.b.c.d", "a.x.c", "a.b.cc"}},
		{"*", []string{"a", "foo", "x-y"}, []string{"a.b", "a.b.c"}},
		{">", []string{"a", "a.b", "a.b.c.d.e"}, nil},
		{"foo.*", []string{"foo.bar", "foo.x"}, []string{"foo", "foo.bar.baz", "bar.foo"}},
		{"foo.>", []string{"foo.bar", "foo.bar.baz", "foo.a.b.c"}, []string{"foo", "bar.foo", "foox.bar"}},
		{"*.bar", []string{"foo.bar", "x.bar"}, []string{"bar", "foo.baz", "a.b.bar"}},
		{"a.*.c", []string{"a.b.c", "a.x.c"}, []string{"a.c", "a.b.b.c", "a.b.d"}},
		{"*.*", []string{"a.b"}, []string{"a", "a.b.c"}},
		{"*.>", []string{"a.b", "a.b.c"}, []string{"a"}},
		{"a.*.>", []string{"a.b.c", "a.b.c.d"}, []string{"a.b", "a"}},
		// Empty tokens are tokens.
		{"a..b", []string{"a..b"}, []string{"a.b", "a...b"}},
		{"a.*", []string{"a.", "a.x"}, []string{"a", "a.."}},
		{"a.>", []string{"a.", "a..", "a.b"}, []string{"a"}},
		{"*", []string{""}, []string{"."}},
		// A channel's '*' and '>' are compared literally.
		{"a.*", []string{"a.*", "a.>"}, nil},
		{"a.b", nil, []string{"a.*", "a.>", "*.b"}},
	}
	sess := SessionID(1)
	for _, tt := range tests {
		l := NewSublist()
		mustSub(t, l, sess, tt.pattern, "")
		var m Matches
		for _, ch := range tt.match {
			if !refMatch(tt.pattern, ch) {
				t.Errorf("reference: %q should match %q", tt.pattern, ch)
			}
			l.Match([]byte(ch), &m)
			if len(m.Subs) != 1 || m.Subs[0] != sess {
				t.Errorf("pattern %q, channel %q: got %v, want a match", tt.pattern, ch, ids(m.Subs))
			}
		}
		for _, ch := range tt.miss {
			if refMatch(tt.pattern, ch) {
				t.Errorf("reference: %q should not match %q", tt.pattern, ch)
			}
			l.Match([]byte(ch), &m)
			if !m.Empty() {
				t.Errorf("pattern %q, channel %q: got %v, want no match", tt.pattern, ch, ids(m.Subs))
			}
		}
	}
}

func TestSublistDedupAcrossPatterns(t *testing.T) {
	l := NewSublist()
	ss := newSessions(3)
	for _, p := range []string{"a.b.c", "a.*.c", "a.>", ">", "*.b.*", "a.b.*"} {
		mustSub(t, l, ss[0], p, "")
	}
	mustSub(t, l, ss[1], "a.>", "")
	mustSub(t, l, ss[1], "x.>", "") // does not match, but makes ss[1] multi
	mustSub(t, l, ss[2], "a.b.c", "")
	var m Matches
	l.Match([]byte("a.b.c"), &m)
	if got := sortedIDs(m.Subs); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("receivers %v, want each of 1,2,3 once", ids(m.Subs))
	}
	// Exact subscriptions first (spec §B.9 rule 1).
	if got := sortedIDs(m.Subs[:2]); !slices.Equal(got, []uint64{1, 3}) {
		t.Fatalf("receivers %v: exact subscribers 1 and 3 must come first", ids(m.Subs))
	}
	if len(m.Queues) != 0 {
		t.Fatalf("unexpected queue matches: %d", len(m.Queues))
	}
}

// Many sessions each holding several matching patterns push saw past its
// linear-scan limit onto its hashed set.
func TestSublistDedupManyMultiSessions(t *testing.T) {
	l := NewSublist()
	ss := newSessions(100)
	for _, s := range ss {
		for _, p := range []string{"a.b", "a.*", "*.b", ">"} {
			mustSub(t, l, s, p, "")
		}
	}
	var m Matches
	for range 3 { // reuse of the scratch must not leak state
		l.Match([]byte("a.b"), &m)
		got := sortedIDs(m.Subs)
		if len(got) != 100 || slices.Compact(got)[99] != 100 {
			t.Fatalf("got %d receivers (%v), want 100 distinct", len(m.Subs), got)
		}
		l.Match([]byte("q.b"), &m)
		if len(m.Subs) != 100 {
			t.Fatalf("q.b: got %d receivers, want 100", len(m.Subs))
		}
	}
}

func memberOrder(q *QueueMatch) []uint64 {
	out := make([]uint64, q.Len())
	for i := range out {
		out[i] = uint64(q.Member(i))
	}
	return out
}

func TestSublistQueueRoundRobin(t *testing.T) {
	l := NewSublist()
	ss := newSessions(3)
	for _, s := range ss {
		mustSub(t, l, s, "jobs.*", "workers")
	}
	var m Matches
	want := [][]uint64{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}, {1, 2, 3}, {2, 3, 1}}
	for i, w := range want {
		l.Match([]byte("jobs.x"), &m)
		if len(m.Subs) != 0 || len(m.Queues) != 1 {
			t.Fatalf("match %d: %d subs, %d queues, want 0 and 1", i, len(m.Subs), len(m.Queues))
		}
		q := &m.Queues[0]
		if p, g := q.Group(); p != "jobs.*" || g != "workers" {
			t.Fatalf("group = (%q, %q)", p, g)
		}
		if got := memberOrder(q); !slices.Equal(got, w) {
			t.Fatalf("match %d: member order %v, want %v", i, got, w)
		}
	}
	// Leaving keeps the join order of the rest; a new member goes last.
	l.Unsubscribe(ss[0], "jobs.*", "workers")
	mustSub(t, l, ss[0], "jobs.*", "workers")
	l.Match([]byte("jobs.y"), &m)
	rotations := [][]uint64{{2, 3, 1}, {3, 1, 2}, {1, 2, 3}}
	if got := memberOrder(&m.Queues[0]); !slices.ContainsFunc(rotations, func(r []uint64) bool { return slices.Equal(r, got) }) {
		t.Fatalf("after rejoin: %v is not a rotation of join order 2,3,1", got)
	}
}

func TestSublistQueueSnapshotSurvivesChanges(t *testing.T) {
	l := NewSublist()
	ss := newSessions(3)
	for _, s := range ss {
		mustSub(t, l, s, "c", "g")
	}
	var m Matches
	l.Match([]byte("c"), &m)
	before := memberOrder(&m.Queues[0])
	l.RemoveAll(ss[1])
	mustSub(t, l, newSessions(4)[3], "c", "g")
	if got := memberOrder(&m.Queues[0]); !slices.Equal(got, before) {
		t.Fatalf("snapshot changed under the caller: %v, was %v", got, before)
	}
}

func TestSublistQueueSameNameTwoPatterns(t *testing.T) {
	l := NewSublist()
	ss := newSessions(2)
	mustSub(t, l, ss[0], "orders.*", "g")
	mustSub(t, l, ss[1], "orders.>", "g")
	var m Matches
	l.Match([]byte("orders.new"), &m)
	if len(m.Queues) != 2 {
		t.Fatalf("got %d queue groups, want 2 (same name, two patterns)", len(m.Queues))
	}
	var groups []string
	for i := range m.Queues {
		p, g := m.Queues[i].Group()
		groups = append(groups, p+"/"+g)
		if m.Queues[i].Len() != 1 {
			t.Fatalf("group %s has %d members, want 1", p, m.Queues[i].Len())
		}
	}
	slices.Sort(groups)
	if !slices.Equal(groups, []string{"orders.*/g", "orders.>/g"}) {
		t.Fatalf("groups %v", groups)
	}
	// Two names on one pattern are two groups as well.
	mustSub(t, l, ss[0], "orders.*", "h")
	l.Match([]byte("orders.new"), &m)
	if len(m.Queues) != 3 {
		t.Fatalf("got %d queue groups, want 3", len(m.Queues))
	}
}

func TestSublistGroupedAndPlainReceivesTwice(t *testing.T) {
	l := NewSublist()
	s := SessionID(7)
	mustSub(t, l, s, "ch", "")
	mustSub(t, l, s, "ch", "g")
	mustSub(t, l, s, "*", "") // deduplicated with "ch"
	var m Matches
	l.Match([]byte("ch"), &m)
	if len(m.Subs) != 1 || len(m.Queues) != 1 || m.Queues[0].Member(0) != s {
		t.Fatalf("got %d subs, %d queues; want the session once plain and once via its group",
			len(m.Subs), len(m.Queues))
	}
}

func TestSublistSubscribeIdempotentAndCount(t *testing.T) {
	l := NewSublist()
	ss := newSessions(2)
	mustSub(t, l, ss[0], "a.*", "")
	for _, g := range []string{"", "g"} {
		if g == "g" {
			mustSub(t, l, ss[0], "a.*", "g")
		}
		added, err := l.Subscribe(ss[0], "a.*", g)
		if added || err != nil {
			t.Fatalf("duplicate Subscribe(%q) = %v, %v; want false, nil", g, added, err)
		}
	}
	if n := l.Count(ss[0]); n != 2 {
		t.Fatalf("Count = %d, want 2 (duplicates do not count)", n)
	}
	if !l.Has(ss[0], "a.*", "g") || l.Has(ss[0], "a.*", "h") || l.Has(ss[1], "a.*", "") {
		t.Fatal("Has is wrong")
	}
	if n := l.Count(ss[1]); n != 0 {
		t.Fatalf("Count of a stranger = %d", n)
	}
	if l.Len() != 2 {
		t.Fatalf("Len = %d, want 2", l.Len())
	}
	var m Matches
	l.Match([]byte("a.b"), &m)
	if len(m.Subs) != 1 || len(m.Queues) != 1 || m.Queues[0].Len() != 1 {
		t.Fatalf("duplicate registrations leaked into the index: %d subs, %d queues", len(m.Subs), len(m.Queues))
	}
}

func TestSublistUnsubscribeAndRemoveAll(t *testing.T) {
	l := NewSublist()
	ss := newSessions(3)
	mustSub(t, l, ss[0], "a.b", "")
	mustSub(t, l, ss[0], "a.>", "")
	mustSub(t, l, ss[0], "a.b", "g")
	mustSub(t, l, ss[1], "a.b", "")
	mustSub(t, l, ss[1], "a.b", "g")
	mustSub(t, l, ss[2], "a.*", "")

	if l.Unsubscribe(ss[2], "a.b", "") || l.Unsubscribe(ss[0], "a.b", "h") || l.Unsubscribe(ss[0], "fo*", "") {
		t.Fatal("Unsubscribe of something never registered reported true")
	}
	if !l.Unsubscribe(ss[0], "a.b", "") || l.Unsubscribe(ss[0], "a.b", "") {
		t.Fatal("Unsubscribe must succeed once")
	}
	var m Matches
	l.Match([]byte("a.b"), &m)
	if got := sortedIDs(m.Subs); !slices.Equal(got, []uint64{1, 2, 3}) { // ss[0] still via a.>
		t.Fatalf("after unsubscribe: %v", got)
	}
	if n := l.RemoveAll(ss[0]); n != 2 {
		t.Fatalf("RemoveAll = %d, want 2", n)
	}
	if l.Count(ss[0]) != 0 || l.RemoveAll(ss[0]) != 0 {
		t.Fatal("RemoveAll left registrations")
	}
	l.Match([]byte("a.b"), &m)
	if got := sortedIDs(m.Subs); !slices.Equal(got, []uint64{2, 3}) {
		t.Fatalf("after RemoveAll: %v", got)
	}
	if len(m.Queues) != 1 || m.Queues[0].Len() != 1 || m.Queues[0].Member(0) != ss[1] {
		t.Fatal("group should hold only session 2")
	}
	l.RemoveAll(ss[1])
	l.RemoveAll(ss[2])
	if l.Len() != 0 {
		t.Fatalf("Len = %d after removing everything", l.Len())
	}
	// The trie is pruned back to an empty root.
	r := &l.mu.root
	if !r.empty() || len(l.mu.bySess) != 0 {
		t.Fatalf("index not empty: lit=%d star=%v full=%v sessions=%d", len(r.lit), r.star, r.full, len(l.mu.bySess))
	}
	l.Match([]byte("a.b"), &m)
	if !m.Empty() {
		t.Fatal("match on empty index")
	}
}

func TestSublistPatterns(t *testing.T) {
	l := NewSublist()
	if p := l.Patterns(); p == nil || len(p) != 0 {
		t.Fatalf("empty Patterns() = %#v, want []", p)
	}
	ss := newSessions(3)
	mustSub(t, l, ss[0], "b.*", "")
	mustSub(t, l, ss[1], "b.*", "")
	mustSub(t, l, ss[0], "b.*", "w")
	mustSub(t, l, ss[2], "b.*", "w")
	mustSub(t, l, ss[1], "b.*", "a")
	mustSub(t, l, ss[2], "a", "")
	mustSub(t, l, ss[2], ">", "")
	mustSub(t, l, ss[0], "b", "g") // grouped only: no Group "" entry
	want := []PatternStat{
		{">", "", 1},
		{"a", "", 1},
		{"b", "g", 1},
		{"b.*", "", 2},
		{"b.*", "a", 1},
		{"b.*", "w", 2},
	}
	if got := l.Patterns(); !slices.Equal(got, want) {
		t.Fatalf("Patterns() =\n%v\nwant\n%v", got, want)
	}
	l.RemoveAll(ss[0])
	want = []PatternStat{{">", "", 1}, {"a", "", 1}, {"b.*", "", 1}, {"b.*", "a", 1}, {"b.*", "w", 1}}
	if got := l.Patterns(); !slices.Equal(got, want) {
		t.Fatalf("after RemoveAll: Patterns() =\n%v\nwant\n%v", got, want)
	}
}

// refSub is one registration of the reference model.
type refSub struct {
	s              SessionID
	pattern, group string
}

// TestSublistModel drives the index and a brute-force model (a list of
// registrations in join order) with the same random operations and
// compares every match.
func TestSublistModel(t *testing.T) {
	// "narrow": few sessions, sparse matches; "wide": many sessions on two
	// tokens, so many multi-pattern sessions meet in one match (the hashed
	// path of Matches.saw).
	t.Run("narrow", func(t *testing.T) { testSublistModel(t, 12, []string{"a", "b", "c", ""}, 8000) })
	t.Run("wide", func(t *testing.T) { testSublistModel(t, 64, []string{"a", "b"}, 4000) })
}

func testSublistModel(t *testing.T, sessions int, toks []string, steps int) {
	rng := rand.New(rand.NewPCG(uint64(sessions), 2))
	randPattern := func() string {
		n := 1 + rng.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			switch r := rng.IntN(10); {
			case r < 2:
				parts[i] = "*"
			case r < 3 && i == n-1:
				parts[i] = ">"
			case r < 4 && rng.IntN(20) == 0:
				parts[i] = "a*" // invalid now and then
			default:
				parts[i] = toks[rng.IntN(len(toks))]
			}
		}
		return strings.Join(parts, ".")
	}
	randChannel := func() string {
		n := 1 + rng.IntN(5)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = toks[rng.IntN(len(toks))]
		}
		return strings.Join(parts, ".")
	}
	groups := []string{"", "", "", "g1", "g2"}
	ss := newSessions(sessions)

	l := NewSublist()
	var model []refSub
	find := func(s SessionID, p, g string) int {
		return slices.IndexFunc(model, func(r refSub) bool { return r.s == s && r.pattern == p && r.group == g })
	}
	var m Matches
	var nonEmpty, queued, hashed int
	for step := range steps {
		s := ss[rng.IntN(len(ss))]
		switch op := rng.IntN(100); {
		case op < 40:
			p, g := randPattern(), groups[rng.IntN(len(groups))]
			added, err := l.Subscribe(s, p, g)
			if !refValidPattern(p) {
				if err == nil {
					t.Fatalf("step %d: Subscribe(%q) accepted an invalid pattern", step, p)
				}
				continue
			}
			wantAdd := find(s, p, g) < 0
			if err != nil || added != wantAdd {
				t.Fatalf("step %d: Subscribe(%q,%q) = %v, %v; want %v", step, p, g, added, err, wantAdd)
			}
			if wantAdd {
				model = append(model, refSub{s, p, g})
			}
		case op < 55:
			var p, g string
			if i := rng.IntN(len(model) + 1); i < len(model) && rng.IntN(4) > 0 {
				p, g, s = model[i].pattern, model[i].group, model[i].s
			} else {
				p, g = randPattern(), groups[rng.IntN(len(groups))]
			}
			i := find(s, p, g)
			if got := l.Unsubscribe(s, p, g); got != (i >= 0) {
				t.Fatalf("step %d: Unsubscribe(%q,%q) = %v", step, p, g, got)
			}
			if i >= 0 {
				model = slices.Delete(model, i, i+1)
			}
		case op < 58:
			want := 0
			model = slices.DeleteFunc(model, func(r refSub) bool {
				if r.s == s {
					want++
					return true
				}
				return false
			})
			if got := l.RemoveAll(s); got != want {
				t.Fatalf("step %d: RemoveAll = %d, want %d", step, got, want)
			}
		default:
			ch := randChannel()
			l.Match([]byte(ch), &m)
			checkAgainstModel(t, step, ch, model, &m)
			if len(m.Subs) > 0 {
				nonEmpty++
			}
			if len(m.Queues) > 0 {
				queued++
			}
			if len(m.multi) > seenLimit {
				hashed++
			}
		}
		if step%500 == 0 {
			for _, s := range ss {
				want := 0
				for _, r := range model {
					if r.s == s {
						want++
					}
				}
				if got := l.Count(s); got != want {
					t.Fatalf("step %d: Count = %d, want %d", step, got, want)
				}
			}
			if l.Len() != len(model) {
				t.Fatalf("step %d: Len = %d, want %d", step, l.Len(), len(model))
			}
		}
	}
	t.Logf("matches with receivers %d, with groups %d, deduplicated via seenSet %d; %d registrations at the end",
		nonEmpty, queued, hashed, len(model))
}

func checkAgainstModel(t *testing.T, step int, ch string, model []refSub, m *Matches) {
	t.Helper()
	var plain, exact []uint64
	type gkey struct{ pattern, group string }
	wantGroups := map[gkey][]uint64{} // members in join order
	for _, r := range model {
		if !refMatch(r.pattern, ch) {
			continue
		}
		if r.group == "" {
			if !slices.Contains(plain, uint64(r.s)) {
				plain = append(plain, uint64(r.s))
			}
			if r.pattern == ch {
				exact = append(exact, uint64(r.s))
			}
		} else {
			k := gkey{r.pattern, r.group}
			wantGroups[k] = append(wantGroups[k], uint64(r.s))
		}
	}
	got := ids(m.Subs)
	slices.Sort(plain)
	if g := slices.Sorted(slices.Values(got)); !slices.Equal(g, plain) {
		t.Fatalf("step %d: channel %q: receivers %v, want %v", step, ch, g, plain)
	}
	slices.Sort(exact)
	if g := slices.Sorted(slices.Values(got[:len(exact)])); !slices.Equal(g, exact) {
		t.Fatalf("step %d: channel %q: receivers %v do not start with the exact ones %v", step, ch, got, exact)
	}
	if len(m.Queues) != len(wantGroups) {
		t.Fatalf("step %d: channel %q: %d groups, want %d", step, ch, len(m.Queues), len(wantGroups))
	}
	for i := range m.Queues {
		q := &m.Queues[i]
		p, g := q.Group()
		want, ok := wantGroups[gkey{p, g}]
		if !ok {
			t.Fatalf("step %d: channel %q: unexpected group (%q, %q)", step, ch, p, g)
		}
		delete(wantGroups, gkey{p, g})
		order := memberOrder(q)
		// Member(0..) must be join order rotated to the round-robin pick.
		k := slices.Index(want, order[0])
		if k < 0 || !slices.Equal(order, append(slices.Clone(want[k:]), want[:k]...)) {
			t.Fatalf("step %d: group (%q, %q): order %v is not a rotation of %v", step, p, g, order, want)
		}
	}
}

// FuzzSublistMatch checks one pattern against one channel: the trie, the
// validator and the reference must agree, with nothing else subscribed.
func FuzzSublistMatch(f *testing.F) {
	for _, c := range [][2]string{
		{"a.b", "a.b"}, {"a.*", "a.b"}, {"a.>", "a.b.c"}, {">", "x"}, {"*", "x.y"},
		{"a..b", "a..b"}, {"a.*.", "a.b."}, {"fo*", "fo*"}, {"a.>.b", "a.x.b"}, {"", ""},
		{"*.>", "."}, {"a.*", "a.*"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, pattern, channel string) {
		l := NewSublist()
		s := SessionID(1)
		added, err := l.Subscribe(s, pattern, "")
		if valid := refValidPattern(pattern); valid != (err == nil) || valid != added {
			t.Fatalf("Subscribe(%q) = %v, %v; reference valid=%v", pattern, added, err, valid)
		}
		if err != nil {
			return
		}
		if _, err := l.Subscribe(s, pattern, "g"); err != nil {
			t.Fatal(err)
		}
		var m Matches
		l.Match([]byte(channel), &m)
		want := refMatch(pattern, channel)
		if got := len(m.Subs) == 1 && len(m.Queues) == 1; got != want || (!want && !m.Empty()) {
			t.Fatalf("pattern %q channel %q: %d subs, %d queues; reference match=%v",
				pattern, channel, len(m.Subs), len(m.Queues), want)
		}
		if l.RemoveAll(s) != 2 || !l.mu.root.empty() {
			t.Fatal("RemoveAll did not empty the index")
		}
	})
}

// TestSublistConcurrent churns registrations while matchers run; under
// -race it checks the locking, and it checks that sessions subscribed for
// the whole run are always found, once.
func TestSublistConcurrent(t *testing.T) {
	l := NewSublist()
	stable := newSessions(4)
	mustSub(t, l, stable[0], "s.x.y", "")
	mustSub(t, l, stable[1], "s.*.y", "")
	mustSub(t, l, stable[2], "s.>", "")
	mustSub(t, l, stable[2], "s.x.*", "") // multi: must still arrive once
	mustSub(t, l, stable[3], "s.>", "q")

	const churners, matchers, rounds = 2, 2, 600
	var stop atomic.Bool
	var churn, match sync.WaitGroup
	patterns := []string{"s.x.y", "s.*.y", "s.>", "s.x.*", "*.x.y", ">", "s.x", "t.>"}
	groups := []string{"", "q", "r"}
	var matched atomic.Int64
	var failure atomic.Value
	for range matchers {
		match.Go(func() {
			var m Matches
			for !stop.Load() || matched.Load() < 100 {
				l.Match([]byte("s.x.y"), &m)
				for i, s := range m.Subs {
					if slices.Contains(m.Subs[i+1:], s) {
						failure.Store(fmt.Sprintf("session %d received twice", uint64(s)))
					}
				}
				for _, s := range stable[:3] {
					if !slices.Contains(m.Subs, s) {
						failure.Store(fmt.Sprintf("stable session %d missing", uint64(s)))
					}
				}
				found := false
				for i := range m.Queues {
					q := &m.Queues[i]
					if q.Len() == 0 {
						failure.Store("empty queue group matched")
					}
					for j := range q.Len() {
						found = found || q.Member(j) == stable[3]
					}
				}
				if !found {
					failure.Store("stable group member missing")
				}
				if matched.Add(1)%64 == 0 {
					_ = l.Patterns()
				}
			}
		})
	}
	for c := range churners {
		churn.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 9))
			own := sessionsFrom(1000*(c+1), 5) // none of them stable
			for range rounds {
				s := own[rng.IntN(len(own))]
				p, g := patterns[rng.IntN(len(patterns))], groups[rng.IntN(len(groups))]
				switch rng.IntN(5) {
				case 0, 1, 2:
					if _, err := l.Subscribe(s, p, g); err != nil {
						failure.Store(err.Error())
					}
				case 3:
					l.Unsubscribe(s, p, g)
				default:
					l.RemoveAll(s)
				}
			}
			for _, s := range own {
				l.RemoveAll(s)
			}
		})
	}
	churn.Wait()
	during := matched.Load()
	stop.Store(true)
	match.Wait()
	t.Logf("%d matches ran during the churn", during)
	if f := failure.Load(); f != nil {
		t.Fatal(f)
	}
	if got := l.Patterns(); len(got) != 5 {
		t.Fatalf("after churn Patterns() = %v, want the 5 stable entries", got)
	}
}
