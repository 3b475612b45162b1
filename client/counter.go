package client

import (
	"fmt"
	"strconv"
	"strings"
)

// Counters (redis-feats servers and dflockd-ng): signed 64-bit integers in
// a key space of their own; an absent counter reads as 0. Overflow is
// refused with an error and leaves the value unchanged.

// Incr adds delta (which may be negative) to the counter key and returns
// the new value.
func Incr(c *Conn, key string, delta int64) (int64, error) {
	return counterOp(c, "incr", key, strconv.FormatInt(delta, 10))
}

// Decr subtracts delta from the counter key and returns the new value.
func Decr(c *Conn, key string, delta int64) (int64, error) {
	return counterOp(c, "decr", key, strconv.FormatInt(delta, 10))
}

// GetCounter returns the counter's value, 0 if it does not exist.
func GetCounter(c *Conn, key string) (int64, error) {
	return counterOp(c, "get", key, "")
}

// SetCounter sets the counter to value.
func SetCounter(c *Conn, key string, value int64) error {
	if err := validateKey(key); err != nil {
		return err
	}
	return expectOK(c, "cset", key, strconv.FormatInt(value, 10))
}

func counterOp(c *Conn, cmd, key, arg string) (int64, error) {
	if err := validateKey(key); err != nil {
		return 0, err
	}
	reply, err := c.request(cmd, key, arg)
	if err != nil {
		return 0, err
	}
	return parseOKNumber(cmd, reply, func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) })
}

// numberReply sends a request answered with "ok <int>".
func numberReply(c *Conn, cmd, key, arg string) (int, error) {
	reply, err := c.request(cmd, key, arg)
	if err != nil {
		return 0, err
	}
	return parseOKNumber(cmd, reply, strconv.Atoi)
}

// parseOKNumber reads "ok <number>".
func parseOKNumber[T int | int64](cmd, reply string, parse func(string) (T, error)) (T, error) {
	num, ok := strings.CutPrefix(reply, statusOK+" ")
	if !ok {
		return 0, replyError(cmd, reply)
	}
	n, err := parse(num)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: bad value %q", ErrServer, cmd, num)
	}
	return n, nil
}
