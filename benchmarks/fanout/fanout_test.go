package fanout

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// small is a short run against the fake; tests override what they need.
// Its Timeout bounds each signal's delivery: generous, so that only a
// signal really lost, never a loaded machine, runs it out.
func small(addr string) Config {
	return Config{Name: "fake", Addr: addr, Subscribers: 40, Signals: 25, Warmup: 3, Timeout: 20 * time.Second}
}

func TestRunAgainstFake(t *testing.T) {
	f := startFake(t, nil)
	cfg := small(f.addr())
	cfg.PID = os.Getpid() // the fake's CPU is this process's
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(cfg.Subscribers)
	if res.Clean.Signals != 25 || res.Clean.Deliveries != 25*n {
		t.Errorf("clean: %d signals, %d deliveries, want 25 and %d", res.Clean.Signals, res.Clean.Deliveries, 25*n)
	}
	// Receipts are counted at the readers present in every phase.
	if res.Clean.Receipt.Count != uint64(25*(n-1)) || res.Clean.Last.Count != 25 {
		t.Errorf("clean: %d receipts, %d last-receiver samples", res.Clean.Receipt.Count, res.Clean.Last.Count)
	}
	if res.After.Signals != 25 || res.After.Deliveries != 25*(n-1) {
		t.Errorf("after: %d signals, %d deliveries", res.After.Signals, res.After.Deliveries)
	}
	// Filled to 128 KiB under capacity, the slow subscriber must be dropped
	// after at most ~128 KiB of the slow phase's pushes (plus the fake's
	// 64-line queue, which calibration counted too).
	if s := res.Slow.Signals; s < 1 || int64(s)*int64(res.PushBytes) > 2*fillMargin {
		t.Errorf("slow phase: %d signals of %d bytes (capacity %d, filled %d)", s, res.PushBytes, res.SlowCapacity, res.SlowFilled)
	}
	if res.SlowCapacity <= fillMargin || res.SlowFilled > res.SlowCapacity-fillMargin {
		t.Errorf("capacity %d, filled %d", res.SlowCapacity, res.SlowFilled)
	}
	for _, p := range []Phase{res.Clean, res.Slow, res.After} {
		if p.Receipt.P50 <= 0 || p.Receipt.P50 > p.Receipt.Max || p.Last.P50 < p.Receipt.P50 || p.Read.P50 < p.Receipt.P50 {
			t.Errorf("implausible latencies: receipt %+v read %+v last %+v", p.Receipt, p.Read, p.Last)
		}
		if p.Wall <= 0 || p.ServerCPU < 0 {
			t.Errorf("wall %v, server CPU %v", p.Wall, p.ServerCPU)
		}
	}
	if res.PushBytes != len("sig bench.fanout ")+200+1 {
		t.Errorf("push bytes %d", res.PushBytes)
	}
}

// A server may stop counting a subscriber that is behind before it
// disconnects it (dflockd-ng's two bounds): the slow phase lasts until the
// disconnect either way.
func TestUncountedBeforeDisconnect(t *testing.T) {
	f := startFake(t, func(f *fakeServer) { f.skipLines = f.queueLines - 300 })
	res, err := Run(context.Background(), small(f.addr()))
	if err != nil {
		t.Fatal(err)
	}
	if res.SlowCounted >= res.Slow.Signals || res.Slow.Deliveries != int64(res.Slow.Signals*39+res.SlowCounted) {
		t.Errorf("slow phase: %d signals, %d counting the slow subscriber, %d deliveries", res.Slow.Signals, res.SlowCounted, res.Slow.Deliveries)
	}
}

func mustFail(t *testing.T, cfg Config, want ...string) {
	t.Helper()
	res, err := Run(context.Background(), cfg)
	if err == nil {
		t.Fatalf("run succeeded (%+v), want an error mentioning %q", res, want)
	}
	var fe *Error
	if !errors.As(err, &fe) {
		t.Fatalf("error %T %v is not an *Error", err, err)
	}
	for _, w := range append(want, "target fake") {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

func TestLostPushFails(t *testing.T) {
	f := startFake(t, func(f *fakeServer) {
		f.tamper = func(id int, line string) (string, bool) {
			// Connection 0 is the publisher, 1 the calibration
			// subscriber, then the readers.
			return line, !(id == 7 && strings.HasPrefix(line, "sig bench.fanout 10 "))
		}
	})
	// Only the Timeout tells a lost push from a late one, so the run lasts
	// it; shorter, a signal merely delayed by a loaded machine would run
	// it out first, and the error would name that one.
	cfg := small(f.addr())
	cfg.Timeout = 10 * time.Second
	mustFail(t, cfg, "signal 10: 1 of 40 readers had not received it")
}

func TestMangledPushFails(t *testing.T) {
	f := startFake(t, func(f *fakeServer) {
		f.tamper = func(id int, line string) (string, bool) {
			if id == 9 && strings.HasPrefix(line, "sig bench.fanout 12 ") {
				return strings.Replace(line, "xx", "xy", 1), true
			}
			return line, true
		}
	})
	mustFail(t, small(f.addr()), "subscriber 7: unexpected line \"sig bench.fanout 12 c ", "padding")
}

func TestWrongReceiverCountFails(t *testing.T) {
	f := startFake(t, func(f *fakeServer) {
		f.count = func(n int) int {
			if n == 40 {
				return 39 // one subscriber silently not counted
			}
			return n
		}
	})
	mustFail(t, small(f.addr()), "publisher", "answered 39 receivers, want 40")
}

func TestUnboundedServerFails(t *testing.T) {
	f := startFake(t, func(f *fakeServer) { f.noBound = true })
	cfg := small(f.addr())
	cfg.MaxSlowBytes = 8 << 20
	mustFail(t, cfg, "slow subscriber", "without being disconnected")
}

func TestPayloadRoundTrip(t *testing.T) {
	for _, size := range []int{minPayload, 100, maxPayload} {
		p := appendPayload([]byte("junk"), 123456, phaseSlow, 1795333206313375056, size)[4:]
		if len(p) != size {
			t.Fatalf("size %d: payload of %d bytes", size, len(p))
		}
		line := []byte("sig ch.a " + string(p))
		seq, ph, sent, err := parsePush(line, "ch.a", size)
		if err != nil || seq != 123456 || ph != phaseSlow || sent != 1795333206313375056 {
			t.Fatalf("size %d: %d %c %d %v", size, seq, ph, sent, err)
		}
	}
	good := "sig ch " + string(appendPayload(nil, 7, phaseClean, 99, minPayload))
	for _, bad := range []string{
		strings.Replace(good, "sig ", "sag ", 1),
		strings.Replace(good, " ch ", " cx ", 1),
		good[:len(good)-1],
		good + "x",
		strings.Replace(good, "7 c 99", "7 c 9a", 1),
		strings.Replace(good, "7 c 99", "- c 99", 1),
		strings.Replace(good, "7 c 99", "7 cc 9", 1),
		good[:len(good)-1] + "y",
	} {
		if _, _, _, err := parsePush([]byte(bad), "ch", minPayload); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "no address"},
		{Config{Addr: "x:1", Subscribers: 1}, "subscribers"},
		{Config{Addr: "x:1", Payload: 10}, "payload"},
		{Config{Addr: "x:1", Payload: 300}, "payload"},
		{Config{Addr: "x:1", Channel: "a b"}, "channel"},
		{Config{Addr: "x:1", Channel: "a.*"}, "channel"},
	} {
		_, err := Run(context.Background(), tc.cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want ErrConfig about %q", tc.cfg, err, tc.want)
		}
	}
}
