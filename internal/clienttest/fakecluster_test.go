package clienttest

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/internal/testport"
	"github.com/dflockd-ng/dflockd/internal/testserver"
)

// A cluster of testserver fakes for failover: the lock table is the
// cluster's (shared by the members, as the replicated state is), the test
// chooses who leads and whom the followers name, and kills members. What
// the real cluster does is in cmd/dflockd's process tests; here the client
// meets each step of a failover on cue.

// killable is a listener whose connections the test can cut, as a
// member's death does: afterwards its port refuses connections.
type killable struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
	dead  bool
}

func (k *killable) Accept() (net.Conn, error) {
	c, err := k.Listener.Accept()
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dead {
		c.Close()
		return nil, net.ErrClosed
	}
	k.conns = append(k.conns, c)
	return c, nil
}

func (k *killable) kill() {
	k.mu.Lock()
	k.dead = true
	conns := k.conns
	k.mu.Unlock()
	k.Listener.Close()
	for _, c := range conns {
		c.Close()
	}
}

type fakeMember struct {
	fake *testserver.Fake
	ln   *killable
	addr string
}

type fakeCluster struct {
	members []*fakeMember

	mu     sync.Mutex
	leader int               // the member that takes requests; -1: none
	named  int               // whom followers name in error_not_leader; -1: nobody
	holds  map[string]string // key → holder's token
	fence  uint64            // the last fence granted
	// waits: an l with a timeout on a held key waits (awaitFree) rather
	// than answering timeout at once.
	waits bool
}

// startFakeCluster starts n members; member 0 leads.
func startFakeCluster(t *testing.T, n int) *fakeCluster {
	fc := &fakeCluster{holds: map[string]string{}, fence: 0x18eae0b1eadb0000}
	for i := range n {
		// A port below the ephemeral range, bound at once: a client that
		// redials a killed member must not be handed its port as its own.
		ln := testport.Listen(t)
		k := &killable{Listener: ln}
		m := &fakeMember{ln: k, addr: ln.Addr().String()}
		m.fake = testserver.StartFake(t, k, func(cmd, key, arg string) string { return fc.reply(i, cmd, key, arg) })
		fc.members = append(fc.members, m)
	}
	return fc
}

func (fc *fakeCluster) addrs() []string {
	var a []string
	for _, m := range fc.members {
		a = append(a, m.addr)
	}
	return a
}

// set makes leader lead (-1: nobody) and the followers name named.
func (fc *fakeCluster) set(leader, named int) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.leader, fc.named = leader, named
}

// steal gives key to another holder, as a lease that ran out and a
// waiter's grant would.
func (fc *fakeCluster) steal(key string) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.fence++
	fc.holds[key] = fmt.Sprintf("%016xffffffffffffffff", fc.fence)
}

// awaitFreeLocked waits, fc.mu released meanwhile, until key is free on
// member i, still leading and alive (""), or the wait of secs seconds
// ends (timeout), or i no longer leads (error_not_leader, as a demoted
// leader answers its waits; nobody reads it from a member that died).
func (fc *fakeCluster) awaitFreeLocked(i int, key, secs string) string {
	n, err := strconv.Atoi(secs)
	if err != nil {
		return "error"
	}
	for deadline := time.Now().Add(time.Duration(n) * time.Second); time.Now().Before(deadline); {
		m := fc.members[i].ln
		m.mu.Lock()
		dead := m.dead
		m.mu.Unlock()
		switch {
		case dead || fc.leader != i:
			return "error_not_leader"
		case fc.holds[key] == "":
			return ""
		}
		fc.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		fc.mu.Lock()
	}
	return "timeout"
}

func (fc *fakeCluster) holder(key string) string {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.holds[key]
}

// requests returns what member i received, each as "cmd key arg".
func (fc *fakeCluster) requests(i int, cmd string) []string {
	var out []string
	for _, r := range fc.members[i].fake.Requests() {
		if strings.HasPrefix(r, cmd+" ") {
			out = append(out, r)
		}
	}
	return out
}

// reply is member i's answer: followers refuse everything but ping (and
// barrier, which on dflockd-ng they would send to the log: answered here
// so that Fence can ask any member); the leader applies l, n, r and
// stable-ref to the cluster's table. Leases do not run out: steal plays
// that.
func (fc *fakeCluster) reply(i int, cmd, key, arg string) string {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	switch cmd {
	case "ping", "barrier":
		return "ok"
	}
	if i != fc.leader {
		if fc.named < 0 {
			return "error_not_leader"
		}
		return "error_not_leader " + fc.members[fc.named].addr
	}
	f := strings.Fields(arg)
	switch cmd {
	case "stable-ref":
		return "ok"
	case "l":
		if fc.holds[key] != "" && (!fc.waits || len(f) == 0 || f[0] == "0") {
			return "timeout"
		}
		if fc.holds[key] != "" {
			if r := fc.awaitFreeLocked(i, key, f[0]); r != "" {
				return r
			}
		}
		fc.fence++
		fc.holds[key] = fmt.Sprintf("%016x0123456789abcdef", fc.fence)
		lease := "33"
		if len(f) > 1 {
			lease = f[1]
		}
		return "ok " + fc.holds[key] + " " + lease
	case "n":
		if len(f) == 0 || fc.holds[key] != f[0] {
			return "error"
		}
		lease := "33"
		if len(f) > 1 {
			lease = f[1]
		}
		return "ok " + lease
	case "r":
		if fc.holds[key] != arg {
			return "error"
		}
		delete(fc.holds, key)
		return "ok"
	case "incr":
		return "ok 1"
	}
	return "error"
}
