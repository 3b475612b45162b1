package benchmarks

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/fence"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// grantLoop is one engine with one session cycling lock/release on a key.
type grantLoop struct {
	eng      *engine.Engine
	lock     engine.Command
	rel      engine.Command
	fx       engine.Effects
	tokenBuf [fence.TokenLen]byte
}

// newGrantLoop builds an engine whose fences count up from a's seed, each
// reserved through a (a volatile allocator reserves nothing).
func newGrantLoop(a *fence.Allocator) *grantLoop {
	g := &grantLoop{eng: engine.New(engine.Config{FenceFloor: a.Seed(), Ceiling: a, TokenKey: engine.TokenKey{1}})}
	at := timerwheel.Instant(1)
	sess := g.eng.Apply(&engine.Command{Kind: engine.KindOpen, At: at}, &g.fx).Session
	g.lock = engine.Command{Session: sess, At: at, Req: vocab.Request{Op: vocab.OpLock, Key: []byte("grant-bench"), Lease: 30}}
	g.rel = engine.Command{Session: sess, At: at, Req: vocab.Request{Op: vocab.OpRelease, Key: []byte("grant-bench")}}
	return g
}

// grant acquires and releases once; the acquire draws one fence.
func (g *grantLoop) grant(b *testing.B) {
	r := g.eng.Apply(&g.lock, &g.fx)
	if r.Status != vocab.StatusOK {
		b.Fatalf("lock: %+v", r)
	}
	g.rel.Req.Token = r.Token.Append(g.tokenBuf[:0])
	if r := g.eng.Apply(&g.rel, &g.fx); r.Status != vocab.StatusOK {
		b.Fatalf("release: %+v", r)
	}
}

// run grants n times, timing every 16th grant into lat; both loops are
// sampled alike so the sampling cost does not bias the ratio.
func (g *grantLoop) run(b *testing.B, n int, lat []time.Duration) []time.Duration {
	for i := range n {
		if i%16 == 0 {
			s := time.Now()
			g.grant(b)
			lat = append(lat, time.Since(s))
			continue
		}
		g.grant(b)
	}
	return lat
}

// BenchmarkGrantFenceFile compares lock grants with a volatile fence
// allocator and with --fence-state-file, interleaved in chunks within one
// run so machine noise hits both alike. Metrics: ns per grant of each,
// their throughput ratio (file / no file), msyncs per million grants, and
// the p99 latency of a grant with the file.
func BenchmarkGrantFenceFile(b *testing.B) {
	durable, err := fence.Open(filepath.Join(b.TempDir(), "fence.state"), fence.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer durable.Close()
	vol, dur := newGrantLoop(fence.NewVolatile()), newGrantLoop(durable)
	before := durable.Stats().Persists

	const chunk = 1024
	var tVol, tDur time.Duration
	var ratios []float64 // per chunk pair: a noise burst spoils one pair, not the median
	latVol := make([]time.Duration, 0, b.N/16+1)
	latDur := make([]time.Duration, 0, b.N/16+1)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		t0 := time.Now()
		latVol = vol.run(b, n, latVol)
		t1 := time.Now()
		latDur = dur.run(b, n, latDur)
		dv, dd := t1.Sub(t0), time.Since(t1)
		tVol += dv
		tDur += dd
		ratios = append(ratios, float64(dv)/float64(dd))
	}
	b.StopTimer()
	slices.Sort(latDur)
	lat := latDur
	n := float64(b.N)
	b.ReportMetric(float64(tVol.Nanoseconds())/n, "ns/grant-volatile")
	b.ReportMetric(float64(tDur.Nanoseconds())/n, "ns/grant-file")
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "throughput-ratio")
	b.Logf("ratio quantiles p10 %.4f p25 %.4f p50 %.5f p75 %.4f p90 %.4f (%d pairs)", ratios[len(ratios)/10], ratios[len(ratios)/4], ratios[len(ratios)/2], ratios[len(ratios)*3/4], ratios[len(ratios)*9/10], len(ratios))
	b.ReportMetric(float64(durable.Stats().Persists-before)*1e6/n, "msyncs/Mgrant")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns/grant-file")
}
