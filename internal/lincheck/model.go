// Package lincheck is the sequential specification against which tests
// check histories recorded by concurrent clients of a dflockd-ng cluster
// with porcupine: try-locks with leases and fences, counters, and KV
// registers, each key its own partition.
//
// Leases are timed. A lock granted to an acquire called at instant c with
// lease L cannot be free again without a release before c+L: the server
// starts the lease when the request arrives, after it was sent, and a
// failover can only lengthen it. A connection the client closes may have
// its locks released from then on (auto-release on disconnect), so a
// grant's FreeAfter is the earlier of c+L and that close. Another grant is
// legal only if it returned at or after the holder's FreeAfter: this is
// lease safety as a client sees it. Fences of a key strictly increase in
// grant order.
//
// An operation whose outcome is unknown (error_not_leader, a lost
// connection, no reply in time) may or may not have taken effect, at any
// instant after its call: its Return is Never.
//
// A history checked whole grows without bound in the checker's time and
// memory (porcupine's search of a partition is held in memory, and an
// operation of unknown outcome is concurrent with all that follows it in
// its partition). Tests bound it by construction: a Rotation moves
// clients to fresh keys every so many operations, so no partition exceeds
// that many; a client that has an operation of unknown outcome on a key
// leaves that key; and Check checks partition by partition, with a
// deadline, and reports the heap it took.
//
// Keys are independent objects in the model: a key's state is its own
// (holder, FreeAfter, last fence; counter; register) and a step reads no
// other key's, and what the server couples across keys (a connection's
// close releasing all its locks) reaches the model as an input of each
// operation (FreeAfter), not as shared state. So a history is
// linearizable if and only if each key's subhistory is (linearizability
// is local), and checking per key is exact.
//
// The package does no I/O; it holds no state but a History's and a
// Rotation's counter; the model's functions are pure.
package lincheck

import (
	"fmt"
	"math"

	"github.com/anishathalye/porcupine"
)

// Never is the return instant of an operation of unknown outcome.
const Never = math.MaxInt64

// Kind is an operation of the history.
type Kind uint8

const (
	Acquire    Kind = iota + 1 // l key "0 <lease>": a try-lock
	Release                    // r key <token>
	Incr                       // incr key 1
	CounterGet                 // get key
	KSet                       // kset key <value>
	KGet                       // kget key
	KCas                       // kcas key <old>\t<new>\t0
)

var kindNames = [...]string{Acquire: "acquire", Release: "release", Incr: "incr", CounterGet: "get",
	KSet: "kset", KGet: "kget", KCas: "kcas"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Input is an operation as called. Instants are nanoseconds on the
// history's monotonic clock; the model reads Return (lease safety), so
// the instants are part of the input, not only of the operation.
type Input struct {
	Kind  Kind
	Key   string
	Token string // Release
	Lease int64  // Acquire: nanoseconds
	Value string // KSet; KCas: the new value
	Old   string // KCas: "" for "must be absent"
	Call  int64
	// Return is when the reply came, or Never if the outcome is unknown.
	Return int64
}

// Output is what the operation returned.
type Output struct {
	Unknown bool
	// OK: Acquire granted, Release ok, KCas ok, KGet found a value.
	OK    bool
	Token string // Acquire
	Fence uint64 // Acquire
	N     int64  // Incr, CounterGet
	Value string // KGet
	// FreeAfter (Acquire granted or unknown): the earliest instant its
	// lock may be free again without a release (see the package doc).
	FreeAfter int64
}

// lockState is a lock partition's state. A holder of unknown token
// (an acquire of unknown outcome that took effect) is "?".
type lockState struct {
	holder    string // "" free
	freeAfter int64  // the holder's FreeAfter
	last      uint64 // the last fence granted on the key
}

// counter is a counter partition's state.
type counter int64

// register is a KV partition's state: "" is absent (values are never
// empty).
type register string

// Model is the specification of a partitioned history.
var Model = porcupine.NondeterministicModel{
	Partition: partition,
	// A partition's first operation tells its type: the states of the
	// other types die at the first step.
	Init:              func() []any { return []any{lockState{}, counter(0), register("")} },
	Step:              step,
	DescribeOperation: describe,
	DescribeState:     func(s any) string { return fmt.Sprintf("%+v", s) },
}

// family sorts the kinds by key space: locks, counters and KV keys of the
// same name are different objects.
func family(k Kind) string {
	switch k {
	case Acquire, Release:
		return "lock"
	case Incr, CounterGet:
		return "counter"
	default:
		return "kv"
	}
}

func partition(h []porcupine.Operation) [][]porcupine.Operation {
	type id struct{ family, key string }
	index := map[id]int{}
	var out [][]porcupine.Operation
	for _, op := range h {
		in := op.Input.(Input)
		k := id{family(in.Kind), in.Key}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], op)
	}
	return out
}

func step(state, input, output any) []any {
	in, out := input.(Input), output.(Output)
	switch s := state.(type) {
	case lockState:
		if family(in.Kind) != "lock" {
			return nil
		}
		// The holder's lease may have ended before this operation took
		// effect, if it returned after the holder's FreeAfter. Not before
		// one of unknown outcome: its Never tells nothing of when it took
		// effect (porcupine may have placed it before an operation that
		// returned long before the lease's end). What it could see of an
		// ended lease the next known operation sees as well.
		var next []any
		next = stepLock(next, s, in, out)
		if s.holder != "" && !out.Unknown && in.Return >= s.freeAfter {
			next = stepLock(next, lockState{last: s.last}, in, out)
		}
		return next
	case counter:
		if family(in.Kind) != "counter" {
			return nil
		}
		return stepCounter(s, in, out)
	case register:
		if family(in.Kind) != "kv" {
			return nil
		}
		return stepRegister(s, in, out)
	}
	return nil
}

func stepLock(next []any, s lockState, in Input, out Output) []any {
	switch in.Kind {
	case Acquire:
		switch {
		case out.Unknown:
			// Not applied, or answered timeout, or granted: to a token
			// nobody learnt, with a fence nobody saw (later grants still
			// must exceed the last one seen).
			next = append(next, s)
			if s.holder == "" {
				next = append(next, lockState{holder: "?", freeAfter: out.FreeAfter, last: s.last})
			}
		case out.OK:
			if s.holder == "" && out.Fence > s.last {
				next = append(next, lockState{holder: out.Token, freeAfter: out.FreeAfter, last: out.Fence})
			}
		default: // timeout: held
			if s.holder != "" {
				next = append(next, s)
			}
		}
	case Release:
		mine := s.holder == in.Token
		switch {
		case out.Unknown:
			next = append(next, s)
			if mine {
				next = append(next, lockState{last: s.last})
			}
		case out.OK:
			if mine {
				next = append(next, lockState{last: s.last})
			}
		default: // error: not the holder
			if !mine {
				next = append(next, s)
			}
		}
	}
	return next
}

func stepCounter(v counter, in Input, out Output) []any {
	switch in.Kind {
	case Incr:
		switch {
		case out.Unknown:
			return []any{v, v + 1}
		case counter(out.N) == v+1:
			return []any{v + 1}
		}
	case CounterGet:
		if out.Unknown || counter(out.N) == v {
			return []any{v}
		}
	}
	return nil
}

func stepRegister(v register, in Input, out Output) []any {
	switch in.Kind {
	case KSet:
		if out.Unknown {
			return []any{v, register(in.Value)}
		}
		return []any{register(in.Value)}
	case KGet:
		switch {
		case out.Unknown:
			return []any{v}
		case out.OK && v != "" && register(out.Value) == v:
			return []any{v}
		case !out.OK && v == "":
			return []any{v}
		}
	case KCas:
		match := v == register(in.Old)
		switch {
		case out.Unknown:
			if match {
				return []any{v, register(in.Value)}
			}
			return []any{v}
		case out.OK && match:
			return []any{register(in.Value)}
		case !out.OK && !match:
			return []any{v}
		}
	}
	return nil
}

func describe(input, output any) string {
	in, out := input.(Input), output.(Output)
	var arg string
	switch in.Kind {
	case Acquire:
		arg = fmt.Sprintf(" lease %dms", in.Lease/1e6)
	case Release:
		arg = " " + in.Token
	case KSet:
		arg = " " + in.Value
	case KCas:
		arg = fmt.Sprintf(" %q→%q", in.Old, in.Value)
	}
	var res string
	switch {
	case out.Unknown:
		res = "unknown"
	case in.Kind == Acquire && out.OK:
		res = fmt.Sprintf("ok %s fence %d, free after %.3fs", out.Token, out.Fence, float64(out.FreeAfter)/1e9)
	case in.Kind == Acquire:
		res = "timeout"
	case in.Kind == Incr || in.Kind == CounterGet:
		res = fmt.Sprint("ok ", out.N)
	case in.Kind == KGet && out.OK:
		res = "ok " + out.Value
	case in.Kind == KGet:
		res = "nil"
	case out.OK:
		res = "ok"
	default:
		res = "error/conflict"
	}
	ret := "∞"
	if in.Return != Never {
		ret = fmt.Sprintf("%.3fs", float64(in.Return)/1e9)
	}
	return fmt.Sprintf("%v %s%s [%.3fs, %s] → %s", in.Kind, in.Key, arg, float64(in.Call)/1e9, ret, res)
}
