//go:build !race

package timerwheel

import "testing"

// TestZeroAllocs pins the hot paths at zero allocations: timers are armed
// and fired on every lock request, under a shard mutex.
func TestZeroAllocs(t *testing.T) {
	w := New(0)
	nodes := make([]Node, 4096)
	for i := range nodes {
		w.Add(&nodes[i], Tick(1+i*37))
	}
	var extra Node
	now := Tick(0)
	refire := func(n *Node) { w.Add(n, w.Now()+1+Tick(len(nodes))*37) }
	i := 0
	cases := []struct {
		name string
		f    func()
	}{
		{"Add+Cancel", func() {
			w.Add(&extra, now+Tick(i%100_000))
			w.Cancel(&extra)
			i++
		}},
		{"Reset", func() {
			w.Reset(&nodes[i%len(nodes)], now+1+Tick(i*7919%1_000_000))
			i++
		}},
		{"Advance", func() {
			now += 50
			w.Advance(now, 0, refire)
		}},
		{"Advance/budget", func() {
			now += 50
			w.Advance(now, 2, refire)
		}},
		{"NextDeadline", func() { w.NextDeadline() }},
	}
	for _, c := range cases {
		if n := testing.AllocsPerRun(1000, c.f); n != 0 {
			t.Errorf("%s: %v allocs/op, want 0", c.name, n)
		}
	}

	d, tts := newTestDriver(NewFakeClock(0), 4)
	for _, tt := range tts {
		tt.fire = func(*Node, Tick) {}
	}
	var dn Node
	tick := Tick(0)
	if n := testing.AllocsPerRun(1000, func() {
		tick++
		tts[1].arm(&dn, tick)
		d.RunOnce(Of(tick))
	}); n != 0 {
		t.Errorf("Driver Notify+RunOnce: %v allocs/op, want 0", n)
	}
}
