package suite

import (
	"sort"
)

// Record is one measured run, as kept in the raw JSON results. Durations
// are nanoseconds; the CPU figures are 0 when the server was not measured.
// A "pair" is one cycle of the workload: acquire+release for locks, one
// incr, a write and its read-back for kv and list.
type Record struct {
	Target       string  `json:"target"`
	Workload     string  `json:"workload"`
	Conns        int     `json:"conns"`
	Depth        int     `json:"depth"`
	Rep          int     `json:"rep"`
	PairsPerS    float64 `json:"pairs_per_s"`
	ReqPerS      float64 `json:"requests_per_s"`
	P50Ns        int64   `json:"p50_ns"`
	P99Ns        int64   `json:"p99_ns"`
	P999Ns       int64   `json:"p999_ns"`
	MaxNs        int64   `json:"max_ns"`
	CPUPerPairNs float64 `json:"server_cpu_per_pair_ns,omitempty"`
	CPUPerReqNs  float64 `json:"server_cpu_per_request_ns,omitempty"`
	Cores        float64 `json:"server_cores,omitempty"`
	RSSBytes     int64   `json:"server_rss_bytes,omitempty"`
}

// Stat is the median and range of repeated measurements.
type Stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// Aggregate returns the median (mean of the middle two for an even count),
// minimum and maximum of xs; the zero Stat for none.
func Aggregate(xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Stat{Median: med, Min: s[0], Max: s[n-1], N: n}
}

// CellKey identifies one configuration of one target.
type CellKey struct {
	Target   string
	Workload string
	Conns    int
	Depth    int
}

// Cell aggregates the repetitions of one configuration.
type Cell struct {
	CellKey
	Pairs      Stat // pairs/s
	Ops        Stat // requests/s
	P50        Stat // ns
	P99        Stat // ns
	CPUPerPair Stat // ns; N = 0 when not measured
	CPUPerReq  Stat // ns; N = 0 when not measured
}

// Cells groups records by configuration and aggregates each group.
func Cells(recs []Record) map[CellKey]Cell {
	type acc struct{ pairs, ops, p50, p99, cpu, cpuReq []float64 }
	groups := map[CellKey]*acc{}
	for _, r := range recs {
		k := CellKey{r.Target, r.Workload, r.Conns, r.Depth}
		a := groups[k]
		if a == nil {
			a = &acc{}
			groups[k] = a
		}
		a.pairs = append(a.pairs, r.PairsPerS)
		a.ops = append(a.ops, r.ReqPerS)
		a.p50 = append(a.p50, float64(r.P50Ns))
		a.p99 = append(a.p99, float64(r.P99Ns))
		if r.CPUPerPairNs > 0 {
			a.cpu = append(a.cpu, r.CPUPerPairNs)
		}
		if r.CPUPerReqNs > 0 {
			a.cpuReq = append(a.cpuReq, r.CPUPerReqNs)
		}
	}
	out := make(map[CellKey]Cell, len(groups))
	for k, a := range groups {
		out[k] = Cell{CellKey: k, Pairs: Aggregate(a.pairs), Ops: Aggregate(a.ops), P50: Aggregate(a.p50), P99: Aggregate(a.p99),
			CPUPerPair: Aggregate(a.cpu), CPUPerReq: Aggregate(a.cpuReq)}
	}
	return out
}
