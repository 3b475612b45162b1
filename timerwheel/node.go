package timerwheel

// Node is one timer, embedded by value in the record it times out (lease
// holder, waiter, KV entry...), so arming it allocates nothing. The zero
// value is a valid unarmed node.
//
// A Node is armed in at most one Wheel at a time, and Cancel or Reset must be
// called on that Wheel. Moving or copying an armed Node corrupts the wheel.
//
// The fire callback receives the node; the embedding code finds its record
// from it, typically by making the Node the record's first field and
// converting the pointer (Kind telling record types apart). A Node carries
// no owner pointer of its own: millions of leases each save its 16 bytes.
type Node struct {
	// Kind is free for the owner's use; the wheel never reads it.
	Kind uint8
	// Flags is free for the owner's use, like Kind: a byte the wheel once
	// spent on an armed bool, now armedBit of where (the engine keeps a
	// claim's state and flags in it, so that its slot stays 80 bytes).
	Flags uint8
	// where is the list holding the node: a level slot or one of the
	// wheel's special lists. Cancel needs it to fix the list head and the
	// occupancy bit in O(1). Its armedBit says whether the node is armed.
	where uint16
	// Mark is free for the owner's use, like Kind; the wheel never reads
	// or clears it. It sits in what would be padding before prev, so the
	// node stays 32 bytes (the engine keeps a claim's start time in it).
	Mark       uint32
	prev, next *Node
	deadline   Tick
}

// Armed reports whether the node is in a wheel. It is false inside the fire
// callback: the wheel disarms a node before firing it.
func (n *Node) Armed() bool { return n.where&armedBit != 0 }

// armedBit marks an armed node in where, above every list index.
const armedBit = 1 << 15

// Deadline is the deadline of the node's last Add or Reset; after firing it
// still reports the deadline it fired for.
func (n *Node) Deadline() Tick { return n.deadline }

// SetIdleDeadline gives an unarmed node the deadline Deadline reports,
// without arming it: what a node that fired keeps, for a record restored
// from a snapshot. It panics on an armed node, whose deadline is its
// wheel's.
func (n *Node) SetIdleDeadline(d Tick) {
	if n.Armed() {
		panic("timerwheel: SetIdleDeadline of an armed Node")
	}
	n.deadline = d
}
