package cluster

import (
	"testing"
	"time"
)

// TestGathererHoldsSmallEntriesAfterLargeOnes: after an entry of 40 ops,
// 10 queued ops wait for more, for a quarter of the commit round at most,
// and 30 (three quarters of the crowd) go at once.
func TestGathererHoldsSmallEntriesAfterLargeOnes(t *testing.T) {
	var g gatherer
	t0 := time.Unix(1000, 0)
	commit := 2 * time.Millisecond
	if hold, _ := g.hold(40, t0, commit); hold {
		t.Fatal("the first entry was held: nothing was proposed before it")
	}
	g.proposed(40)
	hold, until := g.hold(10, t0, commit)
	if !hold || !until.Equal(t0.Add(commit/4)) {
		t.Fatalf("10 ops after an entry of 40: hold %v until %v, want a hold until %v", hold, until, t0.Add(commit/4))
	}
	if hold, again := g.hold(20, t0.Add(100*time.Microsecond), commit); !hold || !again.Equal(until) {
		t.Fatalf("20 ops within the hold: hold %v until %v, want the same hold", hold, again)
	}
	if hold, _ := g.hold(20, until, commit); hold {
		t.Fatal("the hold outlived its end")
	}
	g.proposed(20)
	if hold, _ := g.hold(30, t0, commit); hold {
		t.Fatal("30 ops, three quarters of the crowd, were held")
	}
}

// TestGathererNeverHoldsALoneClient: entries of one op are never held, and
// a crowd that has gone decays until they are not.
func TestGathererNeverHoldsALoneClient(t *testing.T) {
	var g gatherer
	t0 := time.Unix(1000, 0)
	commit := 4 * time.Millisecond
	for i := range 5 {
		if hold, _ := g.hold(1, t0, commit); hold {
			t.Fatalf("entry %d of a lone client was held", i)
		}
		g.proposed(1)
	}
	g.proposed(50)
	for i := 0; ; i++ {
		hold, until := g.hold(1, t0, commit)
		if !hold {
			break
		}
		if until.Sub(t0) > maxGather {
			t.Fatalf("a hold of %v, above %v", until.Sub(t0), maxGather)
		}
		if i == 64 {
			t.Fatalf("after %d entries of one op the crowd is still %d", i, g.crowd)
		}
		g.proposed(1) // the hold ended: the op went alone
	}
}

// TestGathererWithoutACommitTimeDoesNotHold: before any entry applied
// there is nothing to size a hold by.
func TestGathererWithoutACommitTimeDoesNotHold(t *testing.T) {
	g := gatherer{crowd: 100}
	if hold, _ := g.hold(1, time.Unix(1000, 0), 0); hold {
		t.Fatal("held with no commit time known")
	}
}
