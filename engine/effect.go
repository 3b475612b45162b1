package engine

// Effect is what a command does to a session other than answering its
// caller: the late reply of a parked request (a grant, a timeout, an
// error, a popped value) or a push. Apply and Advance only collect
// effects; the caller hands them to their sessions once the engine's
// locks are released, so nothing in the engine ever waits on a transport.
type Effect struct {
	To     SessionID
	Result Result
	// Group, when not nil, makes a push go to one member of a queue group
	// (spec §B.9): the members in join order, Start the round-robin turn.
	// The delivery gives it to the first member from Start on that can
	// take it (one whose unread pushes are under its bound), counts the
	// group as a receiver if one could, and otherwise gives it to To (the
	// turn's member), which is then cut as a slow consumer. Which
	// sessions are backlogged is the transport's knowledge, not state of
	// the engine, so that choice is the delivery's. The slice is shared
	// and must not be modified.
	Group []SessionID
	Start int
	// Caused, on the late reply of a request that ran from its session's
	// queue (queue.go), is how many of the effects right after it that
	// request caused: a signal's receivers (KindReceivers) are counted
	// among them, as for a reply and the pushes of its command.
	Caused int
}

// Member returns the i-th member of a group push's round-robin order.
func (f *Effect) Member(i int) SessionID {
	i += f.Start
	if i >= len(f.Group) {
		i -= len(f.Group)
	}
	return f.Group[i]
}

// Effects collects the effects of commands, in the order they happened.
// The caller owns it: pass it to Apply or Advance, deliver List, then
// Reset it for the next command.
type Effects struct {
	List []Effect
}

// Reset empties fx, keeping its capacity.
func (fx *Effects) Reset() {
	clear(fx.List)
	fx.List = fx.List[:0]
}

func (fx *Effects) add(to SessionID, r Result) {
	fx.List = append(fx.List, Effect{To: to, Result: r})
}
