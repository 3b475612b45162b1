package engine

import (
	"unsafe"

	"github.com/dflockd-ng/dflockd/timerwheel"
)

// Kinds of the records whose timers a shard's wheel holds. Each record
// has its timerwheel.Node as its first field, so a fired node converts
// back to its record: no owner pointer per timer (timerwheel.Node).
// TestTimerFirstField keeps the layouts honest.
const (
	timerSlot    uint8 = iota + 1 // *slot: a waiter's timeout or a holder's lease
	timerKV                       // *kvEntry: a TTL
	timerPop                      // *popWaiter: a blocking pop's timeout
	timerBarrier                  // *barrierWaiter: a bwait's timeout
)

func slotOf(n *timerwheel.Node) *slot                   { return (*slot)(unsafe.Pointer(n)) }
func kvOf(n *timerwheel.Node) *kvEntry                  { return (*kvEntry)(unsafe.Pointer(n)) }
func popOf(n *timerwheel.Node) *popWaiter               { return (*popWaiter)(unsafe.Pointer(n)) }
func barrierWaiterOf(n *timerwheel.Node) *barrierWaiter { return (*barrierWaiter)(unsafe.Pointer(n)) }
