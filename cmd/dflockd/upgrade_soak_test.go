package main

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// soakClient increments its own counter, one request at a time, on a
// connection to the member it believes leads, and keeps the account that
// proves no acknowledged write was lost: its counter is its alone, so
// the value each acknowledgement carries must exceed the one before, and
// the counter's final value must be the last one acknowledged.
type soakClient struct {
	key     string
	members []string // client addresses, to try in turn
	gate    *sync.RWMutex

	acked     atomic.Int64 // increments acknowledged
	ambiguous atomic.Int64 // sent, no acknowledgement: applied or not
	last      atomic.Int64 // the value the last acknowledgement carried
	err       atomic.Value // string: the first broken promise

	c    net.Conn
	r    *bufio.Reader
	next int // the member tried next when no leader is named
}

// soakRequestTimeout bounds one request: a request outliving it counts as
// ambiguous (a leader that is going away may still commit it).
const soakRequestTimeout = 5 * time.Second

// soakStopWait bounds a client's wait, once told to stop, for the
// acknowledgement that fixes its counter's final value.
const soakStopWait = 60 * time.Second

// run increments until stop is closed, then until its last request is
// acknowledged, so that the final value is known exactly; abort ends it
// at once (a test that failed, its members being killed).
func (c *soakClient) run(stop, abort <-chan struct{}, done *sync.WaitGroup) {
	defer done.Done()
	defer func() {
		if c.c != nil {
			c.c.Close()
		}
	}()
	var stopped time.Time
	for {
		if stopped.IsZero() {
			select {
			case <-stop:
				stopped = time.Now()
			default:
			}
		}
		ok := c.step()
		if !stopped.IsZero() && ok {
			return
		}
		if !stopped.IsZero() && time.Since(stopped) > soakStopWait {
			c.broken(fmt.Sprintf("%s: no increment acknowledged within %v of the soak's end", c.key, soakStopWait))
		}
		if c.err.Load() != nil {
			return
		}
		select {
		case <-abort:
			return
		default:
		}
	}
}

// step sends one incr and reports whether it was acknowledged. The gate
// lets the test hold every client between requests.
func (c *soakClient) step() bool {
	c.gate.RLock()
	defer c.gate.RUnlock()
	if c.c == nil && !c.dial(c.members[c.next%len(c.members)]) {
		c.next++
		time.Sleep(50 * time.Millisecond)
		return false
	}
	_ = c.c.SetDeadline(time.Now().Add(soakRequestTimeout))
	if _, err := fmt.Fprintf(c.c, "incr\n%s\n1\n", c.key); err != nil {
		c.ambiguous.Add(1)
		c.drop()
		return false
	}
	line, err := c.r.ReadString('\n')
	line = strings.TrimSuffix(line, "\n")
	switch {
	case err != nil:
		c.ambiguous.Add(1)
		c.drop()
		return false
	case strings.HasPrefix(line, "ok "):
		v, perr := strconv.ParseInt(line[3:], 10, 64)
		if perr != nil {
			c.broken(fmt.Sprintf("%s: incr answered %q", c.key, line))
			return false
		}
		if prev := c.last.Load(); v <= prev {
			c.broken(fmt.Sprintf("%s: incr acknowledged %d after %d: an acknowledged write was lost", c.key, v, prev))
			return false
		}
		c.acked.Add(1)
		c.last.Store(v)
		return true
	case strings.HasPrefix(line, "error_not_leader"):
		// Ambiguous: a leader that lost its leadership with the request
		// in its log answers so too. A follower's redirect names the
		// leader; go there.
		c.ambiguous.Add(1)
		c.drop()
		if addr := strings.TrimSpace(strings.TrimPrefix(line, "error_not_leader")); addr != "" {
			c.dial(addr)
		} else {
			c.next++
			time.Sleep(50 * time.Millisecond)
		}
		return false
	default:
		c.broken(fmt.Sprintf("%s: incr answered %q", c.key, line))
		return false
	}
}

func (c *soakClient) dial(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.c, c.r = conn, bufio.NewReader(conn)
	return true
}

func (c *soakClient) drop() {
	if c.c != nil {
		c.c.Close()
		c.c = nil
	}
}

func (c *soakClient) broken(why string) { c.err.CompareAndSwap(nil, why) }
