//go:build linux

package loop

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// closeListener stops accepting on one of gnet's listeners while the
// event loops go on serving the open connections: a drain closes the
// listener (spec §D.5), so that new clients are refused at once and fail
// over, instead of being accepted and reset. gnet v2 can only stop
// everything, and an accept error stops its whole engine, so the listener
// first leaves gnet's acceptor epoll (found, like the loops' pollers in
// pause_linux.go, through /proc/self/fdinfo), then a shutdown through a
// duplicate of its descriptor takes the socket out of the listening state:
// the kernel refuses new connections and resets the ones not accepted yet.
// gnet closes its descriptor as usual when it stops.
func closeListener(e gnet.Engine, addr string) error {
	network, address, ok := strings.Cut(addr, "://")
	if !ok {
		return fmt.Errorf("loop: listener address %q has no network", addr)
	}
	dup, err := e.DupListener(network, address)
	if err != nil {
		return fmt.Errorf("loop: cannot reach listener %s: %w", addr, err)
	}
	defer unix.Close(dup)
	orig, err := originalFD(dup)
	if err != nil {
		return err
	}
	epfd, err := findEpoll(orig)
	if err != nil {
		return err
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_DEL, orig, nil); err != nil {
		return fmt.Errorf("loop: cannot take listener %s off the acceptor: %w", addr, err)
	}
	if err := unix.Shutdown(dup, unix.SHUT_RD); err != nil {
		return fmt.Errorf("loop: cannot stop listening on %s: %w", addr, err)
	}
	return nil
}

// originalFD finds the descriptor dup duplicates: the other one of this
// process open on the same socket.
func originalFD(dup int) (int, error) {
	target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(dup))
	if err != nil {
		return -1, err
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1, err
	}
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n == dup {
			continue
		}
		if link, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && link == target {
			return n, nil
		}
	}
	return -1, fmt.Errorf("loop: no descriptor shares %s with %d", target, dup)
}
