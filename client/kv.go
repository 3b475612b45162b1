package client

import (
	"strconv"
	"strings"
)

// The key-value store (redis-feats servers and dflockd-ng): values are one
// line without TAB; the whole request line is at most 256 bytes. Entries
// may expire after a TTL in seconds (0 = never).

// KVSet stores value under key, expiring after ttlSeconds (0 = never; a
// negative TTL counts as 0).
func KVSet(c *Conn, key, value string, ttlSeconds int) error {
	if err := validateKey(key); err != nil {
		return err
	}
	if err := validateValue("value", value, true); err != nil {
		return err
	}
	if strings.Contains(value, "\t") {
		return compatInvalid("dflockd: value contains tab")
	}
	return expectOK(c, "kset", key, value+"\t"+strconv.Itoa(max(ttlSeconds, 0)))
}

// KVGet returns the value stored under key, or ErrNotFound.
func KVGet(c *Conn, key string) (string, error) {
	return valueOp(c, "kget", key, ErrNotFound)
}

// KVDel deletes key; deleting an absent key is not an error.
func KVDel(c *Conn, key string) error {
	if err := validateKey(key); err != nil {
		return err
	}
	return expectOK(c, "kdel", key, "")
}

// KVCAS replaces the value of key with newValue if it is oldValue, or
// creates it if oldValue is "" and key is absent. It reports whether the
// swap happened: false, nil is a conflict.
func KVCAS(c *Conn, key, oldValue, newValue string, ttlSeconds int) (bool, error) {
	if err := validateKey(key); err != nil {
		return false, err
	}
	// The checks and their texts in the order of dflockd's redis-feats
	// client (compatInvalid).
	if err := validateValue("old value", oldValue, true); err != nil {
		return false, err
	}
	if strings.Contains(oldValue, "\t") {
		return false, compatInvalid("dflockd: oldValue contains tab")
	}
	if newValue == "" {
		return false, compatInvalid("dflockd: newValue must not be empty")
	}
	if err := validateValue("new value", newValue, true); err != nil {
		return false, err
	}
	if strings.Contains(newValue, "\t") {
		return false, compatInvalid("dflockd: newValue contains tab")
	}
	arg := oldValue + "\t" + newValue + "\t" + strconv.Itoa(max(ttlSeconds, 0))
	reply, err := c.request("kcas", key, arg)
	switch {
	case err != nil:
		return false, err
	case reply == statusOK:
		return true, nil
	case reply == statusConflict:
		return false, nil
	}
	return false, replyError("kcas", reply)
}

// valueOp sends a request answered with "ok <value>" or nil, which
// becomes absent. The value is returned verbatim, spaces included.
func valueOp(c *Conn, cmd, key string, absent error) (string, error) {
	if err := validateKey(key); err != nil {
		return "", err
	}
	return valueReply(c, cmd, key, "", absent)
}

func valueReply(c *Conn, cmd, key, arg string, absent error) (string, error) {
	reply, err := c.request(cmd, key, arg)
	switch {
	case err != nil:
		return "", err
	case reply == statusNil:
		return "", absent
	case reply == statusOK:
		return "", nil
	}
	if v, ok := strings.CutPrefix(reply, statusOK+" "); ok {
		return v, nil
	}
	return "", replyError(cmd, reply)
}
