//go:build linux

package loop

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPausedSocketWatchedForNothing: a request that waits under
// --compat=rf stops its connection's reading (v1.go), and with no output
// waiting the socket is then watched for nothing, not for writability: a
// socket with room is always writable, and a level-triggered EPOLLOUT
// would wake the loop over and over for as long as the request waits
// (gnet's write handler does nothing for an empty buffer). The peer
// watch has the socket meanwhile, for a half-close.
func TestPausedSocketWatchedForNothing(t *testing.T) {
	k := key("paused-mask")
	a, b := dial(t, rfsrv), dial(t, rfsrv)
	tok := a.do("l", k, "0 30", "ok T 30 F")[1]
	b.send("l", k, "30 30")
	waitFor(t, func() bool { return waitersOnServer(t, rfsrv, k) == 1 })

	cs := serverConn(t, rfsrv.srv, b.c.LocalAddr().String())
	fd := cs.c.Fd()
	epfd, err := findEpoll(fd, rfsrv.srv.watch.fd())
	if err != nil {
		t.Fatal(err)
	}
	var mask uint32
	waitFor(t, func() bool {
		mask = epollMask(t, epfd, fd)
		return mask&unix.EPOLLIN == 0
	})
	if mask&unix.EPOLLOUT != 0 {
		t.Fatalf("the paused socket's epoll events are %#x: EPOLLOUT with no output waiting wakes the loop until the wait ends", mask)
	}
	w := rfsrv.srv.watch
	w.mu.Lock()
	watched := false
	for _, c := range w.mu.conns {
		watched = watched || c == cs
	}
	w.mu.Unlock()
	if !watched {
		t.Fatal("the paused socket is not in the peer watch")
	}

	a.do("r", k, tok, "ok")
	b.expect("ok T 30 F")
	waitFor(t, func() bool { return epollMask(t, epfd, fd)&unix.EPOLLIN != 0 })
}

// serverConn returns the server's connection whose peer is at remote.
func serverConn(t *testing.T, s *Server, remote string) *conn {
	t.Helper()
	s.open.mu.Lock()
	defer s.open.mu.Unlock()
	for cs := range s.open.m {
		if cs.raw.RemoteAddr().String() == remote {
			return cs
		}
	}
	t.Fatalf("no server connection from %s", remote)
	return nil
}

// epollMask reads the events epoll instance epfd watches fd for, from
// /proc/self/fdinfo ("tfd: FD events: HEX data: ...").
func epollMask(t *testing.T, epfd, fd int) uint32 {
	t.Helper()
	info, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", epfd))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(info))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) >= 4 && string(f[0]) == "tfd:" && string(f[1]) == strconv.Itoa(fd) && string(f[2]) == "events:" {
			m, err := strconv.ParseUint(string(f[3]), 16, 32)
			if err != nil {
				t.Fatal(err)
			}
			return uint32(m)
		}
	}
	t.Fatalf("epoll %d does not watch fd %d", epfd, fd)
	return 0
}
