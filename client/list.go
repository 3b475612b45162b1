package client

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Lists (redis-feats servers and dflockd-ng): double-ended queues of
// one-line values. A push to a list with a blocked popper hands the value
// straight to the longest-waiting one.

// LPush prepends value to the list key and returns its new length (0 on
// redis-feats servers when a blocked popper took the value).
func LPush(c *Conn, key, value string) (int, error) {
	return push(c, "lpush", key, value)
}

// RPush appends value to the list key and returns its new length.
func RPush(c *Conn, key, value string) (int, error) {
	return push(c, "rpush", key, value)
}

// LPop removes and returns the list's first value, or ErrNotFound if it is
// empty.
func LPop(c *Conn, key string) (string, error) {
	return valueOp(c, "lpop", key, ErrNotFound)
}

// RPop removes and returns the list's last value, or ErrNotFound.
func RPop(c *Conn, key string) (string, error) {
	return valueOp(c, "rpop", key, ErrNotFound)
}

// BLPop waits up to timeout for a value at the list's head; a timeout is
// ErrTimeout. timeout 0 does not wait.
func BLPop(c *Conn, key string, timeout time.Duration) (string, error) {
	return blockingPop(c, "blpop", key, timeout)
}

// BRPop waits up to timeout for a value at the list's tail.
func BRPop(c *Conn, key string, timeout time.Duration) (string, error) {
	return blockingPop(c, "brpop", key, timeout)
}

// LLen returns the list's length, 0 if it does not exist.
func LLen(c *Conn, key string) (int, error) {
	if err := validateKey(key); err != nil {
		return 0, err
	}
	return numberReply(c, "llen", key, "")
}

// LRange returns the values from index start to stop, both included;
// negative indexes count from the end (-1 is the last value).
func LRange(c *Conn, key string, start, stop int) ([]string, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	reply, err := c.request("lrange", key, strconv.Itoa(start)+" "+strconv.Itoa(stop))
	if err != nil {
		return nil, err
	}
	doc, ok := strings.CutPrefix(reply, statusOK+" ")
	if !ok {
		return nil, replyError("lrange", reply)
	}
	var items []string
	if err := json.Unmarshal([]byte(doc), &items); err != nil {
		return nil, fmt.Errorf("%w: lrange: bad JSON: %v", ErrServer, err)
	}
	return items, nil
}

func push(c *Conn, cmd, key, value string) (int, error) {
	if err := validateKey(key); err != nil {
		return 0, err
	}
	if err := validateValue("value", value, true); err != nil {
		return 0, err
	}
	return numberReply(c, cmd, key, value)
}

func blockingPop(c *Conn, cmd, key string, timeout time.Duration) (string, error) {
	if err := validateKey(key); err != nil {
		return "", err
	}
	return valueReply(c, cmd, key, strconv.Itoa(secondsCeil(timeout)), ErrTimeout)
}
