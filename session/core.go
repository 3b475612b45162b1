package session

import (
	"crypto/rand"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// NewServerHub builds what every transport of a server shares: an engine
// configured by ecfg (its Profile is cfg.Profile, its Start the clock's
// now; a zero TokenKey becomes a random one) and a hub over it whose
// housekeeping — the engine's timers and the idle-key GC every gcInterval
// (default 5 s) — runs between Start and Stop.
func NewServerHub(cfg Config, ecfg engine.Config, clock timerwheel.Clock, gcInterval time.Duration) *Hub {
	ecfg.Profile = cfg.Profile
	ecfg.Start = clock.Now()
	if ecfg.TokenKey == (engine.TokenKey{}) {
		if _, err := rand.Read(ecfg.TokenKey[:]); err != nil {
			panic("session: no randomness for the token key: " + err.Error())
		}
	}
	// The engine tells the driver of deadlines from its first command on;
	// the driver needs the engine's shard count: hence the indirection.
	var drv atomic.Pointer[timerwheel.Driver]
	ecfg.OnDeadline = func(i int, at timerwheel.Tick) { drv.Load().Notify(i, at) }
	eng := engine.New(ecfg)
	h := NewHub(cfg, eng, clock)
	hk := &housekeeping{hub: h, interval: gcInterval}
	if hk.interval <= 0 {
		hk.interval = 5 * time.Second
	}
	targets := make([]timerwheel.Target, eng.Shards())
	for i := range targets {
		targets[i] = shardTarget{hk, i}
	}
	hk.timers = timerwheel.NewDriver(clock, targets)
	drv.Store(hk.timers)
	h.housekeeping = hk
	return h
}

// housekeeping is a server hub's background work.
type housekeeping struct {
	hub      *Hub
	interval time.Duration
	timers   *timerwheel.Driver
	fx       engine.Effects // the timer driver's scratch (one goroutine)
	stop     chan struct{}
	done     sync.WaitGroup
}

// shardTarget drives one engine shard's timers through the hub, which
// routes what they did.
type shardTarget struct {
	hk *housekeeping
	i  int
}

// Expire runs on the driver's goroutine only, so fx is its own.
func (t shardTarget) Expire(timerwheel.Instant) (timerwheel.Tick, bool) {
	return t.hk.hub.Advance(t.i, &t.hk.fx)
}

// Start runs the housekeeping of a hub made by NewServerHub: the engine's
// timers fire on time and idle keys are pruned every GC interval.
func (h *Hub) Start() {
	hk := h.housekeeping
	hk.stop = make(chan struct{})
	hk.timers.Start()
	hk.done.Add(1)
	go func() {
		defer hk.done.Done()
		t := time.NewTicker(hk.interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				h.GC()
			case <-hk.stop:
				return
			}
		}
	}()
}

// Stop ends what Start began.
func (h *Hub) Stop() {
	hk := h.housekeeping
	close(hk.stop)
	hk.done.Wait()
	hk.timers.Stop()
}
