package timerwheel

import "sync"

// keepDue bounds the due list a Locked keeps between expiries: the usual
// handful of nodes reuses it, a mass expiry's list goes to the collector.
const keepDue = 1024

// Locked is a Wheel behind a mutex, for owners whose nodes are armed from
// many goroutines and fired by a Driver: the transports' read deadlines (a
// gnet loop's connections, a shard of goroutine connections, the HTTP
// API's sessions). It is the Target such an owner hands the driver.
//
// Arming a node whose deadline is earlier than any the driver was told of
// calls notify, outside the lock, with that deadline; the owner passes it
// on with Driver.Notify. Expire fires due nodes by calling fire for each,
// also outside the lock, so fire may arm, reset or cancel nodes (its own
// included) and may take locks that are held elsewhere while arming.
//
// A node handed to fire is already disarmed: Cancel of it, from fire or
// from another goroutine between collecting and firing, is a no-op that
// returns false, and the node fires anyway. An owner that re-arms a node
// from another goroutine may therefore see fire called for a node that is
// armed again; owners decide on their own state (a stored deadline, a
// closing flag) what a firing means, never on the node alone.
//
// The fields of a node in a Locked (Armed, Deadline) are guarded by its
// lock: read them through Armed, or from fire for the node being fired.
type Locked struct {
	mu struct {
		sync.Mutex
		wheel *Wheel
		// published is the earliest deadline notify reported since the
		// last Expire, or Expire's answer: the driver wakes no later.
		// never = nothing published.
		published Tick
	}
	notify func(deadline Tick)
	fire   func(n *Node)
	// due holds the nodes of the Expire in progress. Only Expire touches
	// it, and the driver calls Expire one call at a time, so it needs no
	// lock; it is kept (up to keepDue) so that expiring allocates nothing.
	due []*Node
}

// NewLocked returns an empty Locked whose wheel's time is now. notify is
// called with a deadline earlier than the driver knows of (typically
// driver.Notify(i, deadline) for the target index i of the Locked); fire is
// called for each due node. Neither is called with the lock held.
func NewLocked(now Tick, notify func(deadline Tick), fire func(n *Node)) *Locked {
	if notify == nil || fire == nil {
		panic("timerwheel: NewLocked needs a notify and a fire func")
	}
	l := &Locked{notify: notify, fire: fire}
	l.mu.wheel = New(now)
	l.mu.published = never
	return l
}

// Arm arms n to fire by deadline: an n already armed for that deadline or
// earlier keeps its deadline, a later one is moved earlier. Owners that arm
// lazily (store a deadline on the hot path, check it when the node fires,
// ask again) use it so that a burst of Arm calls never moves the node back
// and forth.
func (l *Locked) Arm(n *Node, deadline Tick) { l.set(n, deadline, false, nil) }

// Reset arms n to fire at deadline, replacing whatever deadline it had,
// earlier or later.
func (l *Locked) Reset(n *Node, deadline Tick) { l.set(n, deadline, true, nil) }

// ResetUnless is Reset unless stop reports true; stop is called under the
// lock. An owner that sets what stop reads before it calls Cancel therefore
// never finds n armed again after its Cancel, whatever goroutine was
// re-arming it. stop must not call the Locked.
func (l *Locked) ResetUnless(n *Node, deadline Tick, stop func() bool) {
	l.set(n, deadline, true, stop)
}

func (l *Locked) set(n *Node, deadline Tick, replace bool, stop func() bool) {
	l.mu.Lock()
	if (stop != nil && stop()) || (!replace && n.Armed() && n.deadline <= deadline) {
		l.mu.Unlock()
		return
	}
	l.mu.wheel.Reset(n, deadline)
	notify := deadline < l.mu.published
	if notify {
		l.mu.published = deadline
	}
	l.mu.Unlock()
	// Outside the lock: the driver's Notify is a compare-and-swap that
	// only lowers, so notifications racing each other cannot lose the
	// earliest.
	if notify {
		l.notify(deadline)
	}
}

// Cancel disarms n and reports whether it was armed. A node never armed,
// cancelled, fired or being fired is left alone, so owners need not know
// which.
func (l *Locked) Cancel(n *Node) bool {
	l.mu.Lock()
	armed := l.mu.wheel.Cancel(n)
	l.mu.Unlock()
	return armed
}

// Armed reports whether n is armed in l.
func (l *Locked) Armed(n *Node) bool {
	l.mu.Lock()
	armed := n.Armed()
	l.mu.Unlock()
	return armed
}

// Len returns the number of armed nodes.
func (l *Locked) Len() int {
	l.mu.Lock()
	n := l.mu.wheel.Len()
	l.mu.Unlock()
	return n
}

// Expire implements Target: it advances the wheel to now, then calls fire
// for every node that came due, once the lock is released.
func (l *Locked) Expire(now Instant) (Tick, bool) {
	l.mu.Lock()
	l.mu.wheel.Advance(now.Tick(), 0, l.collect)
	next, ok := l.mu.wheel.NextDeadline()
	l.mu.published = never
	if ok {
		l.mu.published = next
	}
	l.mu.Unlock()
	due := l.due
	for i, n := range due {
		l.fire(n)
		due[i] = nil // the list does not keep its records alive
	}
	if cap(due) > keepDue {
		due = nil
	}
	l.due = due[:0]
	return next, ok
}

// collect runs under the lock, inside Advance.
func (l *Locked) collect(n *Node) { l.due = append(l.due, n) }
