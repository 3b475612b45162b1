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
