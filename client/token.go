package client

import (
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

// tokensCarryFences reports whether the server's tokens begin with their
// fence (FenceFromToken), which the grant reply does not say: dflockd-ng
// in every profile and dflockd's clustered v2 line do, and they answer
// barrier with ok; the servers whose tokens are random (dflockd up to
// v2.0.x, the redis-feats line, which sends the fence as a field of its
// own) do not know barrier. Asked once per connection, when first needed;
// a failed request counts as no, and is asked again next time.
func (c *Conn) tokensCarryFences() bool {
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
	c.c.fenced.Store(fencedNo)
	return false
}
