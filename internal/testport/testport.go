// Package testport picks loopback ports for servers that a test starts in
// another process, where the port must be chosen before the server binds
// it. A port picked by binding port 0 and closing it comes from the
// kernel's ephemeral range, which every outgoing connection draws from
// too: on a busy machine (go test runs packages in parallel, each making
// thousands of connections) one of them can take the port before the
// server binds it, and the server fails with "address already in use",
// or a stranger's listener answers in its place. The ports picked here
// lie below that range, where the kernel never assigns one by itself.
package testport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// floor is the lowest port picked: above the well-known and the
// commonly configured ports.
const floor = 10000

var (
	mu     sync.Mutex
	handed = map[int]bool{} // ports this process handed out already
)

// Port returns a loopback port that is free now, outside the ephemeral
// range, and not handed out before by this process.
func Port(t testing.TB) int {
	t.Helper()
	p, err := Free()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Free is Port for callers without a testing.TB (a benchmark's child
// processes).
func Free() (int, error) {
	l, err := listenBelow()
	if err != nil {
		return 0, err
	}
	p := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return p, nil
}

// Listen returns a loopback listener on such a port, for a server in the
// test's own process. It stays bound: between a port picked by Port and
// its Listen, another test process can take it ("address already in
// use"); here nothing comes between. The caller closes it.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	l, err := listenBelow()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// listenBelow binds a loopback port below the ephemeral range that this
// process has not handed out before.
func listenBelow() (net.Listener, error) {
	ceil := ephemeralLow()
	for range 1000 {
		p := floor + rand.IntN(ceil-floor)
		mu.Lock()
		taken := handed[p]
		handed[p] = true
		mu.Unlock()
		if taken {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue // in use
		}
		return l, nil
	}
	return nil, fmt.Errorf("testport: no free port in %d..%d after 1000 tries", floor, ceil-1)
}

// Addr returns "127.0.0.1:<Port(t)>".
func Addr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(Port(t)))
}

// ephemeralLow is the lowest port of the kernel's ephemeral range
// (Linux's default, 32768, where it cannot be read).
func ephemeralLow() int {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	if low < floor+1000 {
		low = floor + 1000 // a range configured that low: pick above the floor anyway
	}
	return low
}
