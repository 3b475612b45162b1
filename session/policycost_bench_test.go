package session

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/fence"
	"github.com/dflockd-ng/dflockd/policy"
)

// Policy cost on the request path, as issue #35 states it: 50
// connections, each its own identity of 100 rules (its prefix and 99
// others'), each reading 16 requests at a time (8 lock+release pairs on
// its own keys), against the same on a server without a policy. The two
// servers run op by op, interleaved, so the machine's noise falls on both
// alike; it reports ns per frame of each and their ratio (first/none:
// the policy server's over the other's). The server
// process does more per request than this path (system calls, the event
// loop), the same with a policy or without, so the ratio here bounds the
// ratio of server CPU from above, for what the check itself costs.
func BenchmarkPolicyCost(b *testing.B) {
	const conns, pairs = 50, 8
	var src strings.Builder
	for i := range conns {
		fmt.Fprintf(&src, "identity t%d\n token %s\n allow lock t%d/*\n", i, policy.TokenHash(fmt.Sprint("tok-", i)), i)
		for j := range 99 {
			fmt.Fprintf(&src, " allow lock,read other-%d-%d/*\n", i, j)
		}
	}
	pol, err := policy.Parse([]byte(src.String()))
	if err != nil {
		b.Fatal(err)
	}
	type conn struct {
		c      *fakeConn
		buf    []byte
		tokOff []int
	}
	setUp := func(pol *policy.Policy) (op func()) {
		fs := newFakeServer(b, Config{Policy: pol}, engine.Config{})
		fs.hub.clock = newMonoFrom(fs.clock.Now())
		cs := make([]conn, conns)
		for i := range cs {
			c := fs.open()
			if pol != nil {
				if got := fs.traffic(c, request("auth", "_", fmt.Sprint("tok-", i))); got != "ok\n" {
					b.Fatalf("auth: %q", got)
				}
			}
			c.poison = false
			cs[i].c = c
			for p := range pairs {
				key := fmt.Sprintf("t%d/k%d", i, p%4)
				cs[i].buf = append(cs[i].buf, request("l", key, "0 10")...)
				cs[i].buf = append(cs[i].buf, "r\n"+key+"\n"...)
				cs[i].tokOff = append(cs[i].tokOff, len(cs[i].buf))
				cs[i].buf = append(cs[i].buf, make([]byte, fence.TokenLen)...)
				cs[i].buf = append(cs[i].buf, '\n')
			}
		}
		wantLen := pairs * len("ok "+tokenFor(1)+" 10\nok\n")
		return func() {
			for i := range cs {
				cn := &cs[i]
				base := fs.eng.LastFence()
				for k, off := range cn.tokOff {
					fs.eng.Token(base + uint64(k) + 1).Append(cn.buf[off:off])
				}
				cn.c.out = cn.c.out[:0]
				cn.c.load(cn.buf)
				fs.input(cn.c)
				if len(cn.c.out) != wantLen {
					b.Fatalf("connection %d replies: %q", i, cn.c.out)
				}
			}
		}
	}
	// "policy" is the comparison; "control" runs two servers without a
	// policy the same way (an A/A test): how far from 1 the method
	// itself reads.
	for _, v := range []struct {
		name string
		pol  *policy.Policy
	}{{"policy", pol}, {"control", nil}} {
		b.Run(v.name, func(b *testing.B) {
			with, without := setUp(v.pol), setUp(nil)
			with()
			without()
			tWith, tWithout := alternate(b, with, without)
			frames := float64(b.N * conns * pairs * 2)
			b.ReportMetric(float64(tWith.Nanoseconds())/frames, "ns/frame-first")
			b.ReportMetric(float64(tWithout.Nanoseconds())/frames, "ns/frame-none")
			b.ReportMetric(float64(tWith)/float64(tWithout), "first/none")
		})
	}
}
