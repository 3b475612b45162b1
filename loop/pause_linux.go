//go:build linux

package loop

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// gnet v2 reads every readable socket and offers no way to stop (its issue
// #722): a client that sends and never reads would make the server buffer
// its requests, and their replies, without bound. So the loop changes the
// connection's epoll registration itself: while its output is over the
// bound, the socket is watched for writability only, and TCP flow control
// pushes back on the client.
//
// gnet keeps the poller's descriptor to itself, but Linux shows every epoll
// instance's registrations in /proc/self/fdinfo; the one that watches a
// connection's socket is its loop's poller. gnet registers a connection
// with its own descriptor as the event data, which is what a change must
// keep. gnet itself restores read interest (EPOLLIN|EPOLLPRI) once the
// output has drained: that is the resume.

// readPauser pauses and resumes gnet's reading of this loop's sockets.
// Loop-confined.
type readPauser struct {
	epfd  int  // the loop's epoll descriptor, once found
	tried bool // a search ran (and failed if epfd < 0)
	// notGnet is the peer watch's epoll descriptor (peerwatch_linux.go),
	// which may watch the same sockets and is not the loop's; -1: none.
	notGnet int
}

// pause stops reading socket fd; false if it could not (then the caller
// falls back on closing a connection that passes the hard bound). With
// output waiting (unsent), the socket is watched for writability, and
// gnet, writing the rest, restores reading once it has drained. With none
// it is watched for nothing: a level-triggered EPOLLOUT on a socket with
// room would wake the loop again and again for as long as the pause
// lasts (gnet's write handler does nothing for an empty buffer), which
// is what a request that waits, or a cluster member's answers owed,
// would cost. EPOLLHUP and EPOLLERR are reported whatever the mask: a
// peer that goes is still seen (and a half-close by the peer watch).
func (p *readPauser) pause(fd int, unsent bool) bool {
	var ev uint32
	if unsent {
		ev = unix.EPOLLOUT
	}
	return p.set(fd, ev)
}

// resume restores read interest (and write interest while output waits).
func (p *readPauser) resume(fd int, unsent bool) {
	ev := uint32(unix.EPOLLIN | unix.EPOLLPRI)
	if unsent {
		ev |= unix.EPOLLOUT
	}
	p.set(fd, ev)
}

func (p *readPauser) set(fd int, events uint32) bool {
	if !p.tried {
		p.tried = true
		var err error
		if p.epfd, err = findEpoll(fd, p.notGnet); err != nil {
			p.epfd = -1
		}
	}
	if p.epfd < 0 {
		return false
	}
	ev := unix.EpollEvent{Events: events, Fd: int32(fd)}
	return unix.EpollCtl(p.epfd, unix.EPOLL_CTL_MOD, fd, &ev) == nil
}

// findEpoll returns the epoll descriptor of this process, other than
// skip, that watches fd.
func findEpoll(fd, skip int) (int, error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1, err
	}
	want := []byte("tfd:")
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n == skip {
			continue
		}
		if link, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || link != "anon_inode:[eventpoll]" {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue
		}
		// Lines look like "tfd:       12 events:       19 data: ...".
		sc := bufio.NewScanner(bytes.NewReader(info))
		for sc.Scan() {
			line := sc.Bytes()
			if !bytes.HasPrefix(line, want) {
				continue
			}
			f := bytes.Fields(line[len(want):])
			if len(f) > 0 && string(f[0]) == strconv.Itoa(fd) {
				return n, nil
			}
		}
	}
	return -1, fmt.Errorf("loop: no epoll instance watches fd %d", fd)
}
