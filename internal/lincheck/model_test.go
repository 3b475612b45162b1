package lincheck

import (
	"fmt"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

const ms = int64(time.Millisecond)

// op is an operation called at call ms and returned at ret ms (ret < 0:
// unknown outcome).
func op(client int, in Input, out Output, call, ret int64) porcupine.Operation {
	in.Call, in.Return = call*ms, ret*ms
	if ret < 0 {
		in.Return, out.Unknown = Never, true
	}
	if in.Kind == Acquire && out.FreeAfter == 0 {
		out.FreeAfter = in.Call + in.Lease
	}
	return porcupine.Operation{ClientId: client, Input: in, Call: in.Call, Output: out, Return: in.Return}
}

func acquire(key string, lease int64) Input { return Input{Kind: Acquire, Key: key, Lease: lease * ms} }

func granted(token string, fence uint64) Output { return Output{OK: true, Token: token, Fence: fence} }

func TestModel(t *testing.T) {
	release := func(token string) Input { return Input{Kind: Release, Key: "L", Token: token} }
	incr := Input{Kind: Incr, Key: "C"}
	get := Input{Kind: CounterGet, Key: "C"}
	kset := func(v string) Input { return Input{Kind: KSet, Key: "K", Value: v} }
	kget := Input{Kind: KGet, Key: "K"}
	kcas := func(old, v string) Input { return Input{Kind: KCas, Key: "K", Old: old, Value: v} }
	for _, tc := range []struct {
		name string
		ok   bool
		h    []porcupine.Operation
	}{
		{"grant after the holder's lease", true, []porcupine.Operation{
			op(0, acquire("L", 1000), granted("a", 5), 0, 10),
			op(1, acquire("L", 1000), granted("b", 6), 900, 1001)}},
		{"grant before the holder's lease could end", false, []porcupine.Operation{
			op(0, acquire("L", 1000), granted("a", 5), 0, 10),
			op(1, acquire("L", 1000), granted("b", 6), 900, 999)}},
		{"grant after the holder closed its connection", true, []porcupine.Operation{
			op(0, acquire("L", 1000), Output{OK: true, Token: "a", Fence: 5, FreeAfter: 300 * ms}, 0, 10),
			op(1, acquire("L", 1000), granted("b", 6), 400, 410)}},
		{"grant after a release", true, []porcupine.Operation{
			op(0, acquire("L", 1000), granted("a", 5), 0, 10),
			op(0, release("a"), Output{OK: true}, 20, 30),
			op(1, acquire("L", 1000), granted("b", 6), 40, 50)}},
		{"fence not above the last", false, []porcupine.Operation{
			op(0, acquire("L", 1000), granted("a", 5), 0, 10),
			op(0, release("a"), Output{OK: true}, 20, 30),
			op(1, acquire("L", 1000), granted("b", 5), 40, 50)}},
		{"fences out of order for concurrent grants", true, []porcupine.Operation{
			op(0, acquire("L", 1000), granted("a", 7), 0, 2000),
			op(1, acquire("L", 1000), granted("b", 6), 0, 10)}},
		{"release by a token that does not hold", false, []porcupine.Operation{
			op(0, acquire("L", 1000), granted("a", 5), 0, 10),
			op(1, release("b"), Output{OK: true}, 20, 30)}},
		{"release refused while the holder's lease runs", false, []porcupine.Operation{
			op(0, acquire("L", 1000), granted("a", 5), 0, 10),
			op(0, release("a"), Output{}, 20, 30)}},
		{"release refused after the lease", true, []porcupine.Operation{
			op(0, acquire("L", 1000), granted("a", 5), 0, 10),
			op(0, release("a"), Output{}, 1020, 1030)}},
		{"try-lock times out on a free lock", false, []porcupine.Operation{
			op(0, acquire("L", 1000), Output{}, 0, 10)}},
		{"try-lock times out on a held lock", true, []porcupine.Operation{
			op(0, acquire("L", 1000), granted("a", 5), 0, 10),
			op(1, acquire("L", 1000), Output{}, 5000, 5010)}},
		{"an acquire of unknown outcome may not have happened", true, []porcupine.Operation{
			op(0, acquire("L", 1000), Output{}, 0, -1),
			op(1, acquire("L", 1000), granted("b", 6), 20, 30)}},
		{"an acquire of unknown outcome may hold the lock", true, []porcupine.Operation{
			op(0, acquire("L", 1000), Output{}, 0, -1),
			op(1, acquire("L", 1000), Output{}, 20, 30)}},
		{"two grants and nothing between", false, []porcupine.Operation{
			op(0, acquire("L", 1000), Output{}, 0, -1),
			op(1, acquire("L", 60000), granted("b", 6), 20, 30),
			op(2, acquire("L", 1000), granted("c", 7), 40, 50)}},
		{"counter", true, []porcupine.Operation{
			op(0, incr, Output{N: 1}, 0, 10),
			op(1, incr, Output{}, 20, -1),
			op(0, incr, Output{N: 3}, 30, 40),
			op(0, get, Output{N: 3}, 50, 60)}},
		{"counter lost an increment", false, []porcupine.Operation{
			op(0, incr, Output{N: 1}, 0, 10),
			op(1, incr, Output{N: 1}, 20, 30)}},
		{"counter read stale", false, []porcupine.Operation{
			op(0, incr, Output{N: 1}, 0, 10),
			op(1, get, Output{N: 0}, 20, 30)}},
		{"register", true, []porcupine.Operation{
			op(0, kget, Output{}, 0, 10),
			op(0, kcas("", "a"), Output{OK: true}, 20, 30),
			op(1, kcas("", "b"), Output{}, 40, 50),
			op(1, kcas("a", "b"), Output{OK: true}, 60, 70),
			op(0, kset("c"), Output{}, 80, -1),
			op(1, kget, Output{OK: true, Value: "c"}, 90, 100)}},
		{"register read stale", false, []porcupine.Operation{
			op(0, kset("a"), Output{OK: true}, 0, 10),
			op(0, kset("b"), Output{OK: true}, 20, 30),
			op(1, kget, Output{OK: true, Value: "a"}, 40, 50)}},
		{"register lost", false, []porcupine.Operation{
			op(0, kset("a"), Output{OK: true}, 0, 10),
			op(1, kget, Output{}, 40, 50)}},
		{"compare-and-set refused on a match", false, []porcupine.Operation{
			op(0, kset("a"), Output{OK: true}, 0, 10),
			op(1, kcas("a", "b"), Output{}, 40, 50)}},
		{"keys are independent", true, []porcupine.Operation{
			op(0, acquire("L", 1000), granted("a", 5), 0, 10),
			op(1, acquire("M", 1000), granted("b", 6), 20, 30),
			op(0, kset("x"), Output{OK: true}, 0, 10),
			op(1, Input{Kind: KGet, Key: "other"}, Output{}, 20, 30)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := porcupine.CheckOperationsTimeout(Model.ToModel(), tc.h, 10*time.Second)
			if want := map[bool]porcupine.CheckResult{true: porcupine.Ok, false: porcupine.Illegal}[tc.ok]; got != want {
				t.Fatalf("%v, want %v", got, want)
			}
		})
	}
}

func TestHistoryClosing(t *testing.T) {
	h := NewHistory()
	c1, c2 := h.Conn(), h.Conn()
	h.Add(0, c1, Input{Kind: Acquire, Key: "L", Lease: int64(time.Hour), Call: h.Now(), Return: h.Now()}, Output{OK: true, Token: "a", Fence: 1})
	h.Add(1, c2, Input{Kind: Acquire, Key: "M", Lease: int64(time.Hour), Call: h.Now(), Return: h.Now()}, Output{OK: true, Token: "b", Fence: 2})
	h.Closing(c1)
	h.Add(0, c1, Input{Kind: Acquire, Key: "N", Lease: int64(time.Hour), Call: h.Now()}, Output{Unknown: true})
	ops, unknown := h.Operations()
	if len(ops) != 3 || unknown != 1 {
		t.Fatalf("%d operations, %d unknown; want 3, 1", len(ops), unknown)
	}
	for i, wantEarly := range []bool{true, false, true} {
		out := ops[i].Output.(Output)
		if early := out.FreeAfter < int64(time.Hour); early != wantEarly {
			t.Errorf("operation %d: FreeAfter %v, want before the lease's end: %v", i, time.Duration(out.FreeAfter), wantEarly)
		}
	}
	if ops[2].Return != Never || ops[2].Input.(Input).Return != Never {
		t.Errorf("unknown outcome returned at %d", ops[2].Return)
	}
}

func TestRotation(t *testing.T) {
	r := NewRotation(3)
	var gens []int64
	for range 7 {
		gens = append(gens, r.Next())
	}
	if want := []int64{0, 0, 0, 1, 1, 1, 2}; fmt.Sprint(gens) != fmt.Sprint(want) {
		t.Fatalf("generations %v, want %v", gens, want)
	}
	if k := Key("L0", 12); k != "L0.12" {
		t.Fatalf("Key: %q", k)
	}
}

func TestCheck(t *testing.T) {
	var ops []porcupine.Operation
	for i := range 10 { // ten keys, two grants each: the second after the lease
		key := fmt.Sprint("L", i)
		ops = append(ops, op(0, acquire(key, 1000), granted("a", 5), 0, 10),
			op(1, acquire(key, 1000), granted("b", 6), 900, 1001))
	}
	ops = append(ops, op(2, acquire("L3", 1000), Output{}, 20, -1))
	r := Check(Model.ToModel(), ops, 10*time.Second)
	if r.Result != porcupine.Ok || r.Partitions != 10 || r.Largest != 3 || r.MostUnknown != 1 || r.Failed != nil {
		t.Fatalf("%v; failed: %d ops", r, len(r.Failed))
	}
	if r.PeakHeap == 0 || r.PeakHeap < r.StartHeap {
		t.Fatalf("heap: %d from %d", r.PeakHeap, r.StartHeap)
	}

	// A grant before the lease could end, in one key of many: that
	// partition is the one reported.
	ops = append(ops, op(3, acquire("L7", 1000), granted("c", 7), 1100, 1200))
	r = Check(Model.ToModel(), ops, 10*time.Second)
	if r.Result != porcupine.Illegal || len(r.Failed) != 3 || r.Failed[0].Input.(Input).Key != "L7" {
		t.Fatalf("%v; failed: %v", r, r.Failed)
	}
	if got := len(r.Info.PartialLinearizations()); got != 1 {
		t.Fatalf("linearization info of %d partitions, want the failed one", got)
	}

	// No time left: Unknown, not Ok.
	if r = Check(Model.ToModel(), ops[:4], time.Nanosecond); r.Result != porcupine.Unknown || len(r.Failed) == 0 {
		t.Fatalf("%v", r)
	}
}
