package fanout

import (
	"time"

	"github.com/dflockd-ng/dflockd/benchmarks/loadgen"
	"github.com/dflockd-ng/dflockd/benchmarks/procstat"
)

// Phase is what one phase of signals measured.
type Phase struct {
	Signals    int   `json:"signals"`
	Deliveries int64 `json:"deliveries"` // sum of the receiver counts the server answered
	// Receipt: signal written → kernel receive timestamp of the push, at
	// the Subscribers−1 readers present in every phase.
	Receipt loadgen.Summary `json:"receipt"`
	// Read: signal written → push read by the load generator, same readers.
	Read loadgen.Summary `json:"read"`
	// Last: per signal, written → the last reader's kernel receive timestamp.
	Last       loadgen.Summary `json:"last"`
	Wall       time.Duration   `json:"wall_ns"`
	ServerCPU  time.Duration   `json:"server_cpu_ns,omitempty"`
	CPUPerPush time.Duration   `json:"server_cpu_per_push_ns,omitempty"` // 0 when not measured
}

// Result is one repetition.
type Result struct {
	Target      string `json:"target"`
	Subscribers int    `json:"subscribers"`
	PushBytes   int    `json:"push_bytes"` // one push line, LF included

	Clean Phase `json:"clean"` // every subscriber reads
	Slow  Phase `json:"slow"`  // a never-reading subscriber is connected, at its bound, until the server disconnects it
	After Phase `json:"after"` // after that

	// SlowCounted is how many slow-phase replies still counted the slow
	// subscriber as a receiver.
	SlowCounted int `json:"slow_counted"`
	// SlowCapacity is what a throw-away never-reading subscriber was sent
	// (push bytes) before the server disconnected it: kernel socket buffers
	// plus what the server holds until its backlog bound or write timeout
	// cuts the connection.
	SlowCapacity int64 `json:"slow_capacity_bytes"`
	// SlowFilled is what the slow subscriber was sent on its own channel
	// before the slow phase.
	SlowFilled int64 `json:"slow_filled_bytes"`
	// SlowPending is what could still be read from the slow subscriber's
	// socket once the server had closed it.
	SlowPending int64 `json:"slow_pending_bytes"`
	// Unstamped is how many measured pushes came without a kernel receive
	// timestamp and were timed at their read instead (subscriber.line).
	Unstamped int64 `json:"unstamped_pushes"`
}

// phaseAcc accumulates a phase on the publisher's goroutine.
type phaseAcc struct {
	signals       int
	deliveries    int64
	receipt, read loadgen.Histogram
	last          loadgen.Histogram
	began         time.Time
	cpu0          procstat.Sample
	wall          time.Duration
	cpu           time.Duration
	measured      bool
	pid           int
	firstErr      error
}

func newPhaseAcc(pid int) *phaseAcc { return &phaseAcc{pid: pid} }

func (a *phaseAcc) begin() {
	a.began = time.Now()
	if a.pid > 0 {
		a.cpu0, a.firstErr = procstat.Take(a.pid)
	}
}

func (a *phaseAcc) end() error {
	a.wall = time.Since(a.began)
	if a.pid > 0 && a.firstErr == nil {
		s, err := procstat.Take(a.pid)
		if err != nil {
			return err
		}
		a.cpu, a.measured = s.Since(a.cpu0).CPU, true
	}
	return a.firstErr
}

func (a *phaseAcc) phase() Phase {
	p := Phase{
		Signals: a.signals, Deliveries: a.deliveries,
		Receipt: a.receipt.Summarize(), Read: a.read.Summarize(), Last: a.last.Summarize(),
		Wall: a.wall,
	}
	if a.measured {
		p.ServerCPU = a.cpu
		if a.deliveries > 0 {
			p.CPUPerPush = a.cpu / time.Duration(a.deliveries)
		}
	}
	return p
}
