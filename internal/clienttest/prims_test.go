package clienttest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/client"
	"github.com/dflockd-ng/dflockd/internal/testserver"
)

func TestCounters(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	c := dial(t, srv.Addr())
	if v, err := client.GetCounter(c, "hits"); err != nil || v != 0 {
		t.Fatalf("GetCounter of an absent counter = %d, %v", v, err)
	}
	if v, err := client.Incr(c, "hits", 5); err != nil || v != 5 {
		t.Fatalf("Incr = %d, %v", v, err)
	}
	if v, err := client.Decr(c, "hits", 7); err != nil || v != -2 {
		t.Fatalf("Decr = %d, %v", v, err)
	}
	must(t, client.SetCounter(c, "hits", 1<<62))
	if v, err := client.GetCounter(c, "hits"); err != nil || v != 1<<62 {
		t.Fatalf("GetCounter = %d, %v", v, err)
	}
	_, err := client.Incr(c, "hits", 1<<62)
	wantErr(t, err, client.ErrServer, "Incr past int64")
	if v, _ := client.GetCounter(c, "hits"); v != 1<<62 {
		t.Fatalf("overflowing Incr changed the value to %d", v)
	}
}

func TestKV(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	c := dial(t, srv.Addr())
	_, err := client.KVGet(c, "cfg")
	wantErr(t, err, client.ErrNotFound, "KVGet of an absent key")
	must(t, client.KVSet(c, "cfg", "a value with spaces", 0))
	if v, err := client.KVGet(c, "cfg"); err != nil || v != "a value with spaces" {
		t.Fatalf("KVGet = %q, %v", v, err)
	}
	if ok, err := client.KVCAS(c, "cfg", "wrong", "new", 0); err != nil || ok {
		t.Fatalf("KVCAS with a wrong old value = %v, %v; want a conflict", ok, err)
	}
	if ok, err := client.KVCAS(c, "cfg", "a value with spaces", "new", 0); err != nil || !ok {
		t.Fatalf("KVCAS = %v, %v", ok, err)
	}
	if ok, err := client.KVCAS(c, "fresh", "", "created", 0); err != nil || !ok {
		t.Fatalf("KVCAS create = %v, %v", ok, err)
	}
	if ok, _ := client.KVCAS(c, "fresh", "", "again", 0); ok {
		t.Fatal("KVCAS create of an existing key succeeded")
	}
	must(t, client.KVDel(c, "cfg"))
	must(t, client.KVDel(c, "cfg")) // absent: still ok
	_, err = client.KVGet(c, "cfg")
	wantErr(t, err, client.ErrNotFound, "KVGet after KVDel")
	// TTL: gone after a second.
	must(t, client.KVSet(c, "short", "x", 1))
	eventually(t, "the 1 s TTL to expire", func() bool {
		_, err := client.KVGet(c, "short")
		return err == client.ErrNotFound
	})
}

func TestLists(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, "--compat=rf") // its stats show pop waiters
	c, popper := dial(t, srv.Addr()), dial(t, srv.Addr())
	if n, err := client.RPush(c, "q", "b c"); err != nil || n != 1 {
		t.Fatalf("RPush = %d, %v", n, err)
	}
	if n, err := client.LPush(c, "q", "a"); err != nil || n != 2 {
		t.Fatalf("LPush = %d, %v", n, err)
	}
	client.RPush(c, "q", "d")
	if n, err := client.LLen(c, "q"); err != nil || n != 3 {
		t.Fatalf("LLen = %d, %v", n, err)
	}
	if items, err := client.LRange(c, "q", 0, -1); err != nil || !slices.Equal(items, []string{"a", "b c", "d"}) {
		t.Fatalf("LRange = %q, %v", items, err)
	}
	if v, err := client.LPop(c, "q"); err != nil || v != "a" {
		t.Fatalf("LPop = %q, %v", v, err)
	}
	if v, err := client.RPop(c, "q"); err != nil || v != "d" {
		t.Fatalf("RPop = %q, %v", v, err)
	}
	if v, err := client.BLPop(c, "q", 0); err != nil || v != "b c" {
		t.Fatalf("BLPop of a non-empty list = %q, %v", v, err)
	}
	_, err := client.LPop(c, "q")
	wantErr(t, err, client.ErrNotFound, "LPop of an empty list")
	_, err = client.RPop(c, "q")
	wantErr(t, err, client.ErrNotFound, "RPop of an empty list")
	_, err = client.BRPop(c, "q", 0)
	wantErr(t, err, client.ErrTimeout, "BRPop with timeout 0 of an empty list")

	// A blocked popper gets the next push.
	got := make(chan string, 1)
	go func() {
		v, err := client.BRPop(popper, "jobs", 10*time.Second)
		if err != nil {
			v = "error: " + err.Error()
		}
		got <- v
	}()
	eventually(t, "the popper to block", func() bool { return statsField(t, c, "lists", "jobs", "pop_waiters") == 1 })
	client.LPush(c, "jobs", "job-1")
	if v := receive(t, got, "BRPop"); v != "job-1" {
		t.Fatalf("blocked BRPop got %q", v)
	}
	if items, err := client.LRange(c, "missing", 0, -1); err != nil || len(items) != 0 {
		t.Fatalf("LRange of a missing list = %q, %v", items, err)
	}
}

func TestBarrierWait(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, "--compat=rf") // its stats show barrier participants
	addr := srv.Addr()
	results := make(chan bool, 3)
	for range 3 {
		c := dial(t, addr)
		go func() {
			ok, err := client.BarrierWait(c, "start", 3, 10*time.Second)
			results <- ok && err == nil
		}()
	}
	for i := range 3 {
		if !receive(t, results, "barrier participant") {
			t.Fatalf("participant %d did not pass the barrier", i)
		}
	}
	c := dial(t, addr)
	if ok, err := client.BarrierWait(c, "alone", 2, 0); err != nil || ok {
		t.Fatalf("BarrierWait without the others = %v, %v; want a timeout", ok, err)
	}
	other := dial(t, addr)
	go client.BarrierWait(other, "counted", 2, 10*time.Second)
	eventually(t, "the first participant", func() bool { return statsField(t, c, "barriers", "counted", "participants") == 1 })
	_, err := client.BarrierWait(c, "counted", 3, 0)
	wantErr(t, err, client.ErrBarrierCountMismatch, "BarrierWait with another count")
}

func TestSignals(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	sub := client.NewSignalConn(dial(t, srv.Addr()))
	g1 := client.NewSignalConn(dial(t, srv.Addr()))
	g2 := client.NewSignalConn(dial(t, srv.Addr()))
	pub := dial(t, srv.Addr())
	must(t, sub.Listen("orders.*"))
	must(t, g1.Listen("orders.>", client.WithGroup("workers")))
	must(t, g2.Listen("orders.>", client.WithGroup("workers")))

	// One plain subscriber plus one group: two receivers.
	if n, err := client.Emit(pub, "orders.new", "id 42"); err != nil || n != 2 {
		t.Fatalf("Emit = %d, %v; want 2 receivers", n, err)
	}
	if s := receive(t, sub.Signals(), "signal"); s != (client.Signal{Channel: "orders.new", Payload: "id 42"}) {
		t.Fatalf("received %+v", s)
	}
	// Emit's count says the group took it once; wait (generously) for
	// that delivery, then watch the other member a while for a second
	// one: an absence can only be watched for a while, and a loaded
	// machine can only make that watch miss a duplicate, never invent one.
	var other *client.SignalConn
	select {
	case <-g1.Signals():
		other = g2
	case <-g2.Signals():
		other = g1
	case <-time.After(20 * time.Second):
		t.Fatal("the queue group never delivered the signal")
	}
	select {
	case s := <-other.Signals():
		t.Fatalf("the queue group delivered twice: %+v", s)
	case <-time.After(200 * time.Millisecond):
	}
	// The sender receives its own signal too.
	if n, err := sub.Emit("orders.own", "me"); err != nil || n != 2 {
		t.Fatalf("SignalConn.Emit = %d, %v", n, err)
	}
	if s := receive(t, sub.Signals(), "own signal"); s.Payload != "me" {
		t.Fatalf("received %+v", s)
	}
	must(t, sub.Unlisten("orders.*"))
	must(t, g1.Unlisten("orders.>", client.WithGroup("workers")))
	if n, err := client.Emit(pub, "orders.late", "x"); err != nil || n != 1 {
		t.Fatalf("Emit after Unlisten = %d, %v; want only g2", n, err)
	}
	if sub.Dropped() != 0 {
		t.Fatalf("Dropped = %d", sub.Dropped())
	}
	must(t, sub.Close())
	if _, ok := <-sub.Signals(); ok {
		t.Fatal("Signals not closed by Close")
	}
}

func TestPushBufferOverflowIsCounted(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	d := client.Dialer{PushBuffer: 2}
	c, err := d.Dial(ctxTimeout(t, 10*time.Second), srv.Addr())
	must(t, err)
	sc := client.NewSignalConn(c)
	defer sc.Close()
	must(t, sc.Listen("tick"))
	for range 5 {
		sc.Emit("tick", "x")
	}
	// The pushes may trail the replies; all five arrive in the end.
	eventually(t, "five pushes", func() bool { return len(sc.Signals())+int(sc.Dropped()) == 5 })
	if len(sc.Signals()) != 2 || sc.Dropped() != 3 {
		t.Fatalf("buffered %d, dropped %d; want 2 and 3", len(sc.Signals()), sc.Dropped())
	}
}

func TestWatch(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	wc := client.NewWatchConn(dial(t, srv.Addr()))
	c := dial(t, srv.Addr())
	must(t, wc.Watch("cfg.*"))
	must(t, wc.Watch("jobs"))
	must(t, client.KVSet(c, "cfg.db", "x", 0))
	tok, _, err := client.Acquire(c, "jobs", 0)
	must(t, err)
	must(t, client.Release(c, "jobs", tok))
	for _, want := range []client.WatchEvent{{Type: "kset", Key: "cfg.db"}, {Type: "acquire", Key: "jobs"}, {Type: "release", Key: "jobs"}} {
		if ev := receive(t, wc.Events(), "watch event"); ev != want {
			t.Fatalf("event %+v, want %+v", ev, want)
		}
	}
	must(t, wc.Unwatch("cfg.*"))
	client.KVDel(c, "cfg.db")
	client.Incr(c, "jobs", 1)
	if ev := receive(t, wc.Events(), "watch event"); ev != (client.WatchEvent{Type: "incr", Key: "jobs"}) {
		t.Fatalf("event %+v after Unwatch of cfg.*, want the incr of jobs", ev)
	}
	if wc.Conn() == nil || wc.Dropped() != 0 {
		t.Fatal("Conn or Dropped")
	}
}

func TestLeaderConn(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	a := client.NewLeaderConn(dial(t, srv.Addr()))
	b := client.NewLeaderConn(dial(t, srv.Addr()))
	obs := client.NewLeaderConn(dial(t, srv.Addr()))
	must(t, obs.Observe("primary"))
	tok, lease, _, err := a.Elect("primary", 0, client.WithLeaseTTL(20))
	if err != nil || lease != 20 {
		t.Fatalf("Elect = %d, %v", lease, err)
	}
	if ev := receive(t, obs.Events(), "leader event"); ev != (client.LeaderEvent{Type: "elected", Key: "primary"}) {
		t.Fatalf("observer got %+v", ev)
	}
	_, _, _, err = b.Elect("primary", 0)
	wantErr(t, err, client.ErrTimeout, "second Elect")
	if n, _, err := a.Renew("primary", tok); err != nil || n != 33 {
		t.Fatalf("LeaderConn.Renew = %d, %v", n, err)
	}
	got := make(chan error, 1)
	go func() { _, _, _, err := b.Elect("primary", 10*time.Second); got <- err }()
	eventually(t, "b to queue", func() bool { return statsField(t, a.Conn(), "locks", "primary", "waiters") == 1 })
	must(t, a.Resign("primary", tok))
	must(t, receive(t, got, "queued Elect"))
	var seen []string
	for len(seen) < 3 {
		seen = append(seen, receive(t, obs.Events(), "leader event").Type)
	}
	if !slices.Equal(seen, []string{"resigned", "failover", "elected"}) {
		t.Fatalf("observer saw %v", seen)
	}
	must(t, obs.Unobserve("primary"))
}

// statsField returns a number from the stats document: field of the entry
// for key in the array section ("locks", "lists", …), 0 if absent.
func statsField(t *testing.T, c *client.Conn, section, key, field string) int {
	t.Helper()
	doc, err := client.Stats(c)
	must(t, err)
	var st map[string]json.RawMessage
	must(t, json.Unmarshal([]byte(doc), &st))
	var entries []map[string]any
	if raw, ok := st[section]; ok {
		must(t, json.Unmarshal(raw, &entries))
	}
	for _, e := range entries {
		if e["key"] == key {
			n, _ := e[field].(float64)
			return int(n)
		}
	}
	return 0
}
