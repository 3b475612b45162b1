package lincheck

import (
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// History records the operations of concurrent clients on one monotonic
// clock. It is safe for concurrent use.
type History struct {
	start time.Time
	mu    struct {
		sync.Mutex
		ops     []porcupine.Operation
		unknown int
		conns   int           // connections numbered so far
		holds   map[int][]int // per open connection, its acquires' indices in ops
		closed  map[int]int64 // per closed connection, when
	}
}

// NewHistory starts a history's clock.
func NewHistory() *History {
	h := &History{start: time.Now()}
	h.mu.holds = map[int][]int{}
	h.mu.closed = map[int]int64{}
	return h
}

// Now is the instant on the history's clock.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// Conn numbers a new client connection.
func (h *History) Conn() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.mu.conns++
	return h.mu.conns
}

// Add records an operation sent on connection conn at in.Call and
// answered at in.Return, or of unknown outcome (out.Unknown: its Return
// becomes Never). An acquire's FreeAfter is set here: its call plus its
// lease, or the connection's closing if earlier (before or after this
// Add).
func (h *History) Add(client, conn int, in Input, out Output) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if out.Unknown {
		in.Return = Never
		h.mu.unknown++
	}
	if in.Kind == Acquire && (out.OK || out.Unknown) {
		out.FreeAfter = in.Call + in.Lease
		if at, ok := h.mu.closed[conn]; ok {
			out.FreeAfter = min(out.FreeAfter, at)
		} else {
			h.mu.holds[conn] = append(h.mu.holds[conn], len(h.mu.ops))
		}
	}
	h.mu.ops = append(h.mu.ops, porcupine.Operation{ClientId: client, Input: in, Call: in.Call, Output: out, Return: in.Return})
}

// Closing is called before the client closes connection conn: from now
// on the server may release what was granted on it.
func (h *History) Closing(conn int) {
	now := h.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, i := range h.mu.holds[conn] {
		out := h.mu.ops[i].Output.(Output)
		out.FreeAfter = min(out.FreeAfter, now)
		h.mu.ops[i].Output = out
	}
	delete(h.mu.holds, conn)
	h.mu.closed[conn] = now
}

// Operations returns the history so far and how many of its operations
// are of unknown outcome.
func (h *History) Operations() (ops []porcupine.Operation, unknown int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]porcupine.Operation(nil), h.mu.ops...), h.mu.unknown
}
