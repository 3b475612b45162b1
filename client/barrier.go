package client

import (
	"strconv"
	"time"
)

// BarrierWait joins the barrier key of count participants and waits up to
// timeout for the others. It returns true when the count-th participant
// arrived (every participant is then released and the barrier starts
// afresh), false and no error on timeout. A participant that leaves early
// (timeout or disconnect) makes the others time out too on redis-feats
// servers and on dflockd-ng with --compat=rf. Joining with a count other
// than the first participant's is ErrBarrierCountMismatch.
func BarrierWait(c *Conn, key string, count int, timeout time.Duration) (bool, error) {
	if err := validateKey(key); err != nil {
		return false, err
	}
	reply, err := c.request("bwait", key, strconv.Itoa(count)+" "+strconv.Itoa(secondsCeil(timeout)))
	switch {
	case err != nil:
		return false, err
	case reply == statusOK:
		return true, nil
	case reply == statusTimeout:
		return false, nil
	}
	return false, replyError("bwait", reply)
}
