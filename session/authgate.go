package session

import (
	"net"
	"net/netip"
	"sync"

	"github.com/dflockd-ng/dflockd/timerwheel"
)

// authGate slows token guessing down per client address. dflockd answers a
// failed auth after a 100 ms cool-down and closes, so one connection makes
// ten guesses a second; but the cool-down is per connection, and 200
// connections in parallel would make 200 guesses in the same 100 ms.
//
// The gate gives every address a schedule: an auth attempt is judged at
// once unless an earlier attempt from the same address failed less than
// authCooldown ago, or attempts are already queued; then it waits for the
// next free slot, and each slot is authCooldown after the previous one.
// So an address has at most one failed attempt per authCooldown however
// many connections it opens, and waiting comes before judging, not after:
// a right guess among many parallel ones is not answered early. A client
// that authenticates correctly from an address with no recent failure is
// judged at once and never delayed; one that shares an address with a
// guesser waits its turn.
//
// IPv6 addresses count per /64, the block one host is usually given.
type authGate struct {
	mu    sync.Mutex
	slots map[netip.Prefix]timerwheel.Instant // next instant an attempt may be judged
}

// maxGateEntries triggers a sweep of entries whose slot has passed, so
// the map stays as small as the set of addresses recently penalised.
const maxGateEntries = 4096

func newAuthGate() *authGate {
	return &authGate{slots: make(map[netip.Prefix]timerwheel.Instant)}
}

// gateKey is the address block an auth attempt from addr counts against.
func gateKey(addr net.Addr) netip.Prefix {
	if addr == nil {
		return netip.Prefix{}
	}
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return netip.Prefix{}
	}
	ip := ap.Addr().Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}

// admit returns when an attempt from key arriving at now may be judged:
// now, or a reserved slot later. A slot is reserved pessimistically (as if
// the attempt will fail): a queue of guesses then cannot be judged together
// when the slot of the first one comes.
func (g *authGate) admit(key netip.Prefix, now timerwheel.Instant) timerwheel.Instant {
	g.mu.Lock()
	defer g.mu.Unlock()
	next, ok := g.slots[key]
	if !ok || next <= now {
		return now
	}
	g.slots[key] = next + authCooldownNs
	return next
}

// failed records a failed attempt from key judged at at: the next attempt
// waits at least authCooldown.
func (g *authGate) failed(key netip.Prefix, at timerwheel.Instant) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.slots) >= maxGateEntries {
		for k, next := range g.slots {
			if next <= at {
				delete(g.slots, k)
			}
		}
	}
	if next := at + authCooldownNs; next > g.slots[key] {
		g.slots[key] = next
	}
}

const authCooldownNs = timerwheel.Instant(authCooldown)
