package engine

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// mixedSublist builds n registrations of 2–4 token patterns over a
// 32-word vocabulary, about a fifth of tokens '*' and a tenth of patterns
// ending in '>', spread over 1,000 sessions, and returns 64 literal
// 3-token channels to publish on.
func mixedSublist(tb testing.TB, n int) (*Sublist, [][]byte) {
	rng := rand.New(rand.NewPCG(7, 7))
	word := func() string { return fmt.Sprintf("w%d", rng.IntN(32)) }
	l := NewSublist()
	ss := newSessions(1000)
	for l.Len() < n {
		k := 2 + rng.IntN(3)
		parts := make([]string, k)
		for i := range parts {
			if rng.IntN(5) == 0 {
				parts[i] = "*"
			} else {
				parts[i] = word()
			}
		}
		if rng.IntN(10) == 0 {
			parts[k-1] = ">"
		}
		group := ""
		if rng.IntN(10) == 0 {
			group = "g"
		}
		if _, err := l.Subscribe(ss[rng.IntN(len(ss))], strings.Join(parts, "."), group); err != nil {
			tb.Fatal(err)
		}
	}
	chans := make([][]byte, 64)
	for i := range chans {
		chans[i] = []byte(word() + "." + word() + "." + word())
	}
	return l, chans
}

func BenchmarkSublistMatch(b *testing.B) {
	b.Run("empty", func(b *testing.B) {
		// Nobody subscribed: what every lock operation pays for watch.
		l := NewSublist()
		ch := []byte("orders.eu.new")
		var m Matches
		b.ReportAllocs()
		for b.Loop() {
			l.Match(ch, &m)
		}
	})
	b.Run("literal_1sub", func(b *testing.B) {
		l := NewSublist()
		l.Subscribe(SessionID(1), "orders.eu.new", "")
		ch := []byte("orders.eu.new")
		var m Matches
		b.ReportAllocs()
		for b.Loop() {
			l.Match(ch, &m)
		}
	})
	b.Run("wildcard_1sub", func(b *testing.B) {
		l := NewSublist()
		l.Subscribe(SessionID(1), "orders.*.>", "")
		ch := []byte("orders.eu.new")
		var m Matches
		b.ReportAllocs()
		for b.Loop() {
			l.Match(ch, &m)
		}
	})
	b.Run("fanout_1000", func(b *testing.B) {
		l := NewSublist()
		for _, s := range newSessions(1000) {
			l.Subscribe(s, "orders.eu.new", "")
		}
		ch := []byte("orders.eu.new")
		var m Matches
		b.ReportAllocs()
		for b.Loop() {
			l.Match(ch, &m)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/subscriber")
	})
	b.Run("fanout_1000_dedup", func(b *testing.B) {
		// Every session also holds two wildcard patterns that match.
		l := NewSublist()
		for _, s := range newSessions(1000) {
			l.Subscribe(s, "orders.eu.new", "")
			l.Subscribe(s, "orders.*.new", "")
			l.Subscribe(s, "orders.>", "")
		}
		ch := []byte("orders.eu.new")
		var m Matches
		b.ReportAllocs()
		for b.Loop() {
			l.Match(ch, &m)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/subscriber")
	})
	b.Run("queue_group_100", func(b *testing.B) {
		l := NewSublist()
		for _, s := range newSessions(100) {
			l.Subscribe(s, "jobs.*", "workers")
		}
		ch := []byte("jobs.resize")
		var m Matches
		b.ReportAllocs()
		for b.Loop() {
			l.Match(ch, &m)
		}
	})
	b.Run("mixed_10000", func(b *testing.B) {
		l, chans := mixedSublist(b, 10000)
		var m Matches
		found := 0
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			l.Match(chans[i&63], &m)
			found += len(m.Subs) + len(m.Queues)
			i++
		}
		b.ReportMetric(float64(found)/float64(b.N), "receivers/op")
	})
}

func BenchmarkSublistMatchParallel(b *testing.B) {
	l, chans := mixedSublist(b, 10000)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var m Matches
		i := 0
		for pb.Next() {
			l.Match(chans[i&63], &m)
			i++
		}
	})
}

// BenchmarkSublistLinearScan is the naive alternative (test every pattern
// against the channel) on the same 10,000 patterns, for comparison.
func BenchmarkSublistLinearScan(b *testing.B) {
	l, chans := mixedSublist(b, 10000)
	var patterns []string
	for _, p := range l.Patterns() {
		for range p.Subscribers {
			patterns = append(patterns, p.Pattern)
		}
	}
	chs := make([]string, len(chans))
	for i, c := range chans {
		chs[i] = string(c)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		n := 0
		for _, p := range patterns {
			if refMatch(p, chs[i&63]) {
				n++
			}
		}
		i++
	}
}

func BenchmarkSublistSubscribeUnsubscribe(b *testing.B) {
	l, _ := mixedSublist(b, 10000)
	s := SessionID(1 << 40)
	b.ReportAllocs()
	for b.Loop() {
		l.Subscribe(s, "w1.*.w2", "")
		l.Unsubscribe(s, "w1.*.w2", "")
	}
}
