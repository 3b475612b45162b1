package client

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
)

// FenceFromToken returns the fence carried by a dflockd v2 or dflockd-ng
// token: its first 16 hex digits, a big-endian number that grows with
// every grant. For one key, a later grant's fence is larger, so a
// resource can refuse writes from a holder whose fence is older than one
// it has seen. Tokens of older servers are random and carry no fence; the
// function cannot tell those apart and returns a meaningless number for
// them.
func FenceFromToken(token string) (uint64, error) {
	if len(token) != 32 {
		return 0, fmt.Errorf("%w: token %q is not 32 hex digits", ErrInvalid, token)
	}
	f, err := strconv.ParseUint(token[:16], 16, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: token %q is not 32 hex digits", ErrInvalid, token)
	}
	if _, err := strconv.ParseUint(token[16:], 16, 64); err != nil {
		return 0, fmt.Errorf("%w: token %q is not 32 hex digits", ErrInvalid, token)
	}
	return f, nil
}

// Answers of tokensCarryFences, cached per connection.
const (
	fencedYes = 1
	fencedNo  = 2
)

// fenceProbeSpan bounds how far above a token's fence the fence of the
// probe grant may be: the grants the server made in between. 2^40 is
// four months of grants at 100,000 a second; two random tokens come that
// close once in 2^24 tries. (Too far apart only answers no: Fence 0.)
const fenceProbeSpan = 1 << 40

// tokensCarryFences reports whether the server's tokens begin with their
// fence (FenceFromToken), which the grant reply does not say. token is
// one the server granted. Asked once per connection, when first needed;
// a request that failed leaves the question open, to be asked again.
//
// dflockd-ng in its v2 and rf profiles and dflockd's clustered v2 line
// answer barrier with ok: their tokens carry the fence. The others refuse
// barrier: dflockd up to v2.0.x and the redis-feats line, whose tokens are
// random, but also dflockd-ng with --compat=v1, which refuses it as
// dflockd v1.10 does, and whose tokens carry the fence all the same. For
// those the token's shape tells: a try-lock of a key of the probe's own,
// released at once, takes the server's next fence, just above token's
// where tokens carry fences; two random tokens are that close by chance
// only (see fenceProbeSpan).
func (c *Conn) tokensCarryFences(token string) bool {
	switch c.c.fenced.Load() {
	case fencedYes:
		return true
	case fencedNo:
		return false
	}
	reply, err := c.request("barrier", "_", "_")
	if err != nil {
		return false
	}
	if reply == statusOK {
		c.c.fenced.Store(fencedYes)
		return true
	}
	carry, ok := c.probeFence(token)
	if ok {
		if carry {
			c.c.fenced.Store(fencedYes)
		} else {
			c.c.fenced.Store(fencedNo)
		}
	}
	return carry
}

// probeFence compares token's fence with that of a fresh grant (see
// tokensCarryFences); ok is false when the probe could not be made (a
// failed request, --max-locks reached).
func (c *Conn) probeFence(token string) (carry, ok bool) {
	held, err := FenceFromToken(token)
	if err != nil {
		return false, true // not the shape of a fenced token
	}
	var salt [8]byte
	rand.Read(salt[:])
	key := "dflockd-client.fence-probe." + hex.EncodeToString(salt[:])
	reply, err := c.request("l", key, "0 1")
	if err != nil {
		return false, false
	}
	g, err := parseGrant("l", reply, statusOK)
	if err != nil {
		return false, false
	}
	_, _ = c.request("r", key, g.token) // if this fails, its 1 s lease ends it
	probe, err := FenceFromToken(g.token)
	if err != nil {
		return false, true
	}
	return probe > held && probe-held <= fenceProbeSpan, true
}
