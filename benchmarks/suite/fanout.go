package suite

import (
	"bytes"
	"fmt"
	"time"

	"github.com/dflockd-ng/dflockd/benchmarks/fanout"
)

// fanoutMarkdown renders the fan-out repetitions: one row per phase, each
// figure the median over repetitions.
func (r *Report) fanoutMarkdown(b *bytes.Buffer) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	reps := r.Fanout
	first := reps[0]
	n := first.Subscribers
	med := func(f func(fanout.Result) float64) float64 {
		xs := make([]float64, len(reps))
		for i, x := range reps {
			xs[i] = f(x)
		}
		return Aggregate(xs).Median
	}
	p("### Pub/sub fan-out, %d subscribers\n\n", n)
	p("One signal at a time on one channel (%d-byte push lines), each read by every subscriber before the next is sent. "+
		"Push latency: publisher's write → kernel receive timestamp (SO_TIMESTAMPNS) at each of the %d subscribers present in every phase; "+
		"read: → the load generator's read of it (one core reading %d sockets); last receiver: per signal, the latest receive timestamp. "+
		"Server CPU per push = server CPU time over the phase / pushes the server counted (on loopback it includes the kernel's delivery into the receiving socket). "+
		"Medians over %d repetition(s).\n\n", first.PushBytes, n-1, n, len(reps))
	p("| phase | signals | receivers per signal | push p50 | push p99 | last receiver p50 | last receiver p99 | read p50 | read p99 | server CPU per push |\n")
	p("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	rows := []struct {
		name, receivers string
		ph              func(fanout.Result) fanout.Phase
	}{
		{fmt.Sprintf("all %d read", n), fmt.Sprint(n), func(x fanout.Result) fanout.Phase { return x.Clean }},
		{fmt.Sprintf("%d read + 1 never-reading at its bound, until disconnected", n-1), fmt.Sprintf("%d or %d", n, n-1), func(x fanout.Result) fanout.Phase { return x.Slow }},
		{"after the disconnect", fmt.Sprint(n - 1), func(x fanout.Result) fanout.Phase { return x.After }},
	}
	for _, row := range rows {
		d := func(f func(fanout.Phase) time.Duration) string {
			return FmtNs(med(func(x fanout.Result) float64 { return float64(f(row.ph(x))) }))
		}
		cpu := "–"
		if v := med(func(x fanout.Result) float64 { return float64(row.ph(x).CPUPerPush) }); v > 0 {
			cpu = FmtNs(v)
		}
		p("| %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s |\n", row.name,
			med(func(x fanout.Result) float64 { return float64(row.ph(x).Signals) }), row.receivers,
			d(func(ph fanout.Phase) time.Duration { return ph.Receipt.P50 }), d(func(ph fanout.Phase) time.Duration { return ph.Receipt.P99 }),
			d(func(ph fanout.Phase) time.Duration { return ph.Last.P50 }), d(func(ph fanout.Phase) time.Duration { return ph.Last.P99 }),
			d(func(ph fanout.Phase) time.Duration { return ph.Read.P50 }), d(func(ph fanout.Phase) time.Duration { return ph.Read.P99 }),
			cpu)
	}
	ratio := func(f func(fanout.Phase) time.Duration) float64 {
		return med(func(x fanout.Result) float64 { return float64(f(x.Slow)) / float64(f(x.Clean)) })
	}
	p("\nWith the never-reading subscriber attached, push latency at the others is %.2f× (p50) and %.2f× (p99) that of the clean phase, "+
		"last receiver %.2f× (p50) and %.2f× (p99) (median of per-repetition ratios). ",
		ratio(func(ph fanout.Phase) time.Duration { return ph.Receipt.P50 }), ratio(func(ph fanout.Phase) time.Duration { return ph.Receipt.P99 }),
		ratio(func(ph fanout.Phase) time.Duration { return ph.Last.P50 }), ratio(func(ph fanout.Phase) time.Duration { return ph.Last.P99 }))
	kib := func(f func(fanout.Result) int64) string {
		return fmt.Sprintf("%.1f KiB", med(func(x fanout.Result) float64 { return float64(f(x)) })/1024)
	}
	p("A throw-away never-reading subscriber was sent %s of pushes before the server disconnected it (its socket buffers plus what the server holds before it cuts a slow consumer: 256 KiB unsent, or `--write-timeout`, 5 s by default, with output unsent, whichever comes first); "+
		"the measured one was filled to %s on a channel of its own, then disconnected after %.0f signals (%s) of the slow phase, "+
		"%.0f of whose replies still counted it; %s were still unread in its socket when the server closed it.\n\n",
		kib(func(x fanout.Result) int64 { return x.SlowCapacity }),
		kib(func(x fanout.Result) int64 { return x.SlowFilled }),
		med(func(x fanout.Result) float64 { return float64(x.Slow.Signals) }),
		kib(func(x fanout.Result) int64 { return int64(x.Slow.Signals * x.PushBytes) }),
		med(func(x fanout.Result) float64 { return float64(x.SlowCounted) }),
		kib(func(x fanout.Result) int64 { return x.SlowPending }))
}
