package timerwheel

import (
	"fmt"
	"math"
	"math/bits"
)

const (
	// slotBits gives 64 slots per level, so one uint64 holds a level's
	// occupancy and the next busy slot is one TrailingZeros64.
	slotBits = 6
	numSlots = 1 << slotBits
	slotMask = numSlots - 1
	// numLevels covers 64^6 ms ≈ 2.2 years, past any lease or TTL we
	// expect; later deadlines wait in the overflow list.
	numLevels = 6
	// horizonBits: a deadline whose bits above this differ from the
	// wheel's time lies beyond the top level.
	horizonBits = slotBits * numLevels
)

// Lists beyond the level slots (slot lists are level*numSlots + slot).
const (
	// listDue holds nodes whose deadline has passed; Advance fires them first.
	listDue = numLevels*numSlots + iota
	// listDeferred holds nodes armed from a fire callback with a deadline
	// already passed. They wait for the next Advance, so a callback that
	// keeps re-arming in the past cannot keep one Advance call busy forever.
	listDeferred
	// listOverflow holds deadlines beyond the top level's horizon; they are
	// re-filed when time enters their top-level block, so none fires early.
	listOverflow
	numLists
)

// Every list index must stay below armedBit (node.go).
var _ [armedBit - numLists]struct{}

// Wheel is a hierarchical timer wheel with 1 ms ticks.
//
// It is not safe for concurrent use: its owner guards it, and the fire
// callback runs with that guard held.
//
// Invariant: a node in level L has a deadline that agrees with the wheel's
// time above level L and is later in level L, so its slot lies strictly after
// the current one; when time reaches that slot the node is re-filed (cascaded)
// relative to the new time, landing in a finer level or firing.
type Wheel struct {
	now      Tick
	count    int
	heads    [numLists]*Node
	occupied [numLevels]uint64
	// pastMin is a lower bound on the deadlines in listDue and
	// listDeferred, meaningful while either is non-empty; a lower bound
	// (not exact) because Cancel does not recompute it.
	pastMin Tick
	// overMin is a lower bound on the overflow deadlines, meaningful while
	// the overflow list is non-empty; it tells Advance how far it may jump
	// before re-filing the overflow.
	overMin Tick
	// firing is set while Advance runs, to defer past-deadline Adds made by
	// fire callbacks and to refuse re-entrant Advance calls.
	firing bool
}

// New returns an empty wheel whose time is now.
func New(now Tick) *Wheel {
	return &Wheel{now: now}
}

// Now returns the wheel's time: the last tick Advance reached. After an
// Advance stopped by its budget, that is the deadline it was firing, which
// may be earlier than the time passed to Advance.
func (w *Wheel) Now() Tick { return w.now }

// Len returns the number of armed nodes.
func (w *Wheel) Len() int { return w.count }

// Add arms n to fire at deadline. A deadline at or before Now fires on the
// next Advance call; if Add is called from a fire callback, that is the next
// Advance call after the current one. Add panics if n is already armed,
// because silently re-linking it would corrupt the list it is in.
func (w *Wheel) Add(n *Node, deadline Tick) {
	if n.Armed() {
		panic(fmt.Sprintf("timerwheel: Add of an armed Node (armed for %d, new deadline %d): use Reset", n.deadline, deadline))
	}
	n.where |= armedBit
	n.deadline = deadline
	w.count++
	if deadline <= w.now && w.firing {
		w.pushPast(n, listDeferred)
		return
	}
	w.file(n)
}

// Cancel disarms n and reports whether it was armed. Cancelling an unarmed
// node (never armed, already fired or already cancelled) is a no-op, so
// owners need not track whether their timer already fired.
func (w *Wheel) Cancel(n *Node) bool {
	if !n.Armed() {
		return false
	}
	w.unlink(n)
	n.where = 0
	w.count--
	return true
}

// Reset re-arms n for deadline, whether or not it was armed.
func (w *Wheel) Reset(n *Node, deadline Tick) {
	w.Cancel(n)
	w.Add(n, deadline)
}

// Advance moves the wheel's time to now and calls fire for every node whose
// deadline is at or before it: first, in no particular order, those already
// due at the wheel's time, then the rest in deadline order (ties in no
// particular order). A smaller now than the wheel's time is treated as the
// wheel's time: time never goes backwards.
//
// At most budget nodes fire (budget <= 0: no limit). When the budget runs out
// Advance stops at the deadline it was firing and returns true; the caller
// releases its lock and calls again to continue. Advance also returns true if
// a fire callback armed a node with a deadline at or before Now: such nodes
// fire on the next call, never in this one. Nodes armed by a callback with a
// later deadline, up to now, fire in this call.
//
// Each node is disarmed before fire is called, so fire may Add or Reset it or
// Cancel, Add and Reset other nodes. Fire must not call Advance.
func (w *Wheel) Advance(now Tick, budget int, fire func(*Node)) (more bool) {
	if w.firing {
		panic("timerwheel: Advance called from a fire callback")
	}
	if budget <= 0 {
		budget = math.MaxInt
	}
	w.firing = true
	defer w.endAdvance(&more)
	if now < w.now {
		now = w.now
	}
	if !w.drain(listDue, &budget, fire) {
		return true
	}
	for {
		level, slot, at, ok := w.nextEvent()
		if !ok || at > now {
			break
		}
		w.now = at
		switch {
		case level == 0:
			// Fire straight from the slot: every node in it is due
			// now, and nothing new can land in it (a deadline equal
			// to now is filed as past).
			if !w.drain(slot, &budget, fire) {
				w.moveToDue(slot)
				return true
			}
		case level < numLevels:
			w.cascade(level*numSlots + slot)
			if !w.drain(listDue, &budget, fire) {
				return true
			}
		default:
			w.cascade(listOverflow)
			if !w.drain(listDue, &budget, fire) {
				return true
			}
		}
	}
	w.now = now
	return false
}

// endAdvance makes deferred nodes ordinary past-deadline nodes for the next
// call. It runs deferred so a panicking callback leaves a usable wheel.
func (w *Wheel) endAdvance(more *bool) {
	w.firing = false
	if d := w.heads[listDeferred]; d != nil {
		last := d
		for ; ; last = last.next {
			last.where = listDue | armedBit
			if last.next == nil {
				break
			}
		}
		if due := w.heads[listDue]; due != nil {
			due.prev = last
			last.next = due
		}
		w.heads[listDue] = d
		w.heads[listDeferred] = nil
	}
	*more = *more || w.heads[listDue] != nil
}

// NextDeadline returns a lower bound on the earliest armed deadline, and
// false if nothing is armed. It is exact when the earliest timer is within
// the current 64 ms block (level 0). Otherwise it is the start of the slot
// holding the earliest timer, where Advance must cascade anyway: a driver
// sleeping until this value wakes at most once per level a timer passes
// through, and never late. If a deadline has already passed, the result is
// at or before it (and so at or before Now).
func (w *Wheel) NextDeadline() (Tick, bool) {
	if w.heads[listDue] != nil || w.heads[listDeferred] != nil {
		return w.pastMin, true
	}
	level, _, at, ok := w.nextEvent()
	if !ok {
		return 0, false
	}
	if level == numLevels {
		return w.overMin, true // tighter than the block start
	}
	return at, true
}

// nextEvent returns the next time Advance has work: the earliest occupied
// slot (level < numLevels) or the re-filing of the overflow list (level ==
// numLevels). Only the finest occupied level matters: everything in level L
// is due before the next block of level L+1 begins, which is where level L+1's
// first slot lies at the earliest.
func (w *Wheel) nextEvent() (level, slot int, at Tick, ok bool) {
	for level = 0; level < numLevels; level++ {
		occ := w.occupied[level]
		if occ == 0 {
			continue
		}
		// By the invariant no bit before the current slot is set, so
		// the lowest set bit is the next busy slot without rotating.
		slot = bits.TrailingZeros64(occ)
		shift := uint(level * slotBits)
		block := w.now &^ (Tick(1)<<(shift+slotBits) - 1)
		return level, slot, block | Tick(slot)<<shift, true
	}
	if w.heads[listOverflow] == nil {
		return 0, 0, 0, false
	}
	// Jump straight to the top-level block of the earliest overflow
	// deadline. overMin stays in a later block than now's even when stale
	// (Cancel leaves it): Advance cannot pass that block's start without
	// re-filing the overflow, which recomputes it.
	return numLevels, 0, w.overMin &^ (1<<horizonBits - 1), true
}

// drain fires the nodes of list idx until it is empty (true) or the budget
// is spent with nodes left (false). Callbacks may change the list meanwhile,
// which is why the head is re-read every time.
func (w *Wheel) drain(idx int, budget *int, fire func(*Node)) bool {
	for {
		n := w.heads[idx]
		if n == nil {
			return true
		}
		if *budget == 0 {
			return false
		}
		*budget--
		w.unlink(n)
		n.where = 0
		w.count--
		fire(n)
	}
}

// cascade re-files every node of list idx relative to the wheel's time.
func (w *Wheel) cascade(idx int) {
	n := w.heads[idx]
	w.heads[idx] = nil
	if idx < listDue {
		w.occupied[idx>>slotBits] &^= 1 << (idx & slotMask)
	}
	for n != nil {
		next := n.next
		w.file(n)
		n = next
	}
}

// moveToDue hands the unfired rest of the current level-0 slot to the due
// list: the slot is about to be behind the wheel's time, where the invariant
// allows no node.
func (w *Wheel) moveToDue(slot int) {
	n := w.heads[slot]
	w.heads[slot] = nil
	w.occupied[0] &^= 1 << slot
	for n != nil {
		next := n.next
		w.pushPast(n, listDue)
		n = next
	}
}

// file links n into the list its deadline calls for, relative to the
// wheel's time: past, a level slot, or overflow.
func (w *Wheel) file(n *Node) {
	d := n.deadline
	if d <= w.now {
		w.pushPast(n, listDue)
		return
	}
	// The highest 6-bit group in which deadline and now differ is the
	// level; since the deadline is later, its group there is the later one.
	level := (bits.Len64(uint64(d^w.now)) - 1) / slotBits
	if level >= numLevels {
		if w.heads[listOverflow] == nil || d < w.overMin {
			w.overMin = d
		}
		w.push(n, listOverflow)
		return
	}
	slot := int(uint64(d)>>(level*slotBits)) & slotMask
	w.occupied[level] |= 1 << slot
	w.push(n, level*numSlots+slot)
}

func (w *Wheel) pushPast(n *Node, idx int) {
	if (w.heads[listDue] == nil && w.heads[listDeferred] == nil) || n.deadline < w.pastMin {
		w.pastMin = n.deadline
	}
	w.push(n, idx)
}

func (w *Wheel) push(n *Node, idx int) {
	n.where = uint16(idx) | armedBit
	n.prev = nil
	n.next = w.heads[idx]
	if n.next != nil {
		n.next.prev = n
	}
	w.heads[idx] = n
}

func (w *Wheel) unlink(n *Node) {
	if n.prev != nil {
		n.prev.next = n.next
	} else {
		idx := int(n.where &^ armedBit)
		w.heads[idx] = n.next
		if n.next == nil && idx < listDue {
			w.occupied[idx>>slotBits] &^= 1 << (idx & slotMask)
		}
	}
	if n.next != nil {
		n.next.prev = n.prev
	}
	n.prev, n.next = nil, nil
}
