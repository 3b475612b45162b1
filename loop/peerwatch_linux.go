//go:build linux

package loop

import (
	"sync"

	"golang.org/x/sys/unix"
)

// peerWatch notices that the peer of a connection whose reading is paused
// has half-closed (or closed) its side. gnet learns of an EOF only by
// reading, and then closes the connection at once; a paused connection
// is not read (pause_linux.go), so its peer's going would go unseen
// until reading resumes. A session that must still write what it is
// owed (a cluster member's, session.PeerClosed) pauses reading for that
// reason, and needs to hear of it: this is a second epoll instance, of
// the server's own, that watches the paused sockets for EPOLLRDHUP only
// and posts a deliverPeerClosed to the connection's loop. Nothing else
// reads or writes the sockets here.
//
// A registration names the connection by a number (the event's data), not
// its descriptor:
// a descriptor closed by gnet leaves the epoll set by itself, and its
// number may be reused by the next connection before a stale event is
// looked up.
type peerWatch struct {
	epfd, wake int // the epoll instance; an eventfd that stops run
	mu         struct {
		sync.Mutex
		next  uint32
		conns map[uint32]*conn
	}
	done chan struct{}
}

// newPeerWatch starts a watch, or returns nil if the kernel refuses one:
// half-closes are then noticed when reading resumes.
func newPeerWatch() *peerWatch {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: 0} // number 0: the wake-up
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wake, &ev); err != nil {
		unix.Close(wake)
		unix.Close(epfd)
		return nil
	}
	w := &peerWatch{epfd: epfd, wake: wake, done: make(chan struct{})}
	w.mu.conns = make(map[uint32]*conn)
	go w.run()
	return w
}

// add watches cs's socket until remove, or until one report (the peer goes
// only once). On cs's loop.
func (w *peerWatch) add(cs *conn) {
	if w == nil || cs.watch != 0 {
		return
	}
	w.mu.Lock()
	id := w.mu.next + 1
	for id == 0 || w.mu.conns[id] != nil {
		id++ // after a wrap, past those still watched
	}
	w.mu.next = id
	w.mu.conns[id] = cs
	w.mu.Unlock()
	// The event's data is the number (epoll hands back what it is given;
	// the field is named Fd).
	ev := unix.EpollEvent{Events: unix.EPOLLRDHUP | unix.EPOLLONESHOT, Fd: int32(id)}
	if unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, cs.c.Fd(), &ev) != nil {
		w.forget(id)
		return
	}
	cs.watch = id
}

// remove stops watching cs's socket, which is still open. On cs's loop.
func (w *peerWatch) remove(cs *conn) {
	if w == nil || cs.watch == 0 {
		return
	}
	_ = unix.EpollCtl(w.epfd, unix.EPOLL_CTL_DEL, cs.c.Fd(), nil)
	w.forget(cs.watch)
	cs.watch = 0
}

// closed forgets cs, whose socket gnet has closed (which took it out of
// the epoll set). On cs's loop.
func (w *peerWatch) closed(cs *conn) {
	if w == nil || cs.watch == 0 {
		return
	}
	w.forget(cs.watch)
	cs.watch = 0
}

func (w *peerWatch) forget(id uint32) {
	w.mu.Lock()
	delete(w.mu.conns, id)
	w.mu.Unlock()
}

func (w *peerWatch) run() {
	defer close(w.done)
	evs := make([]unix.EpollEvent, 64)
	for {
		n, err := unix.EpollWait(w.epfd, evs, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return
		}
		for i := range evs[:n] {
			id := uint32(evs[i].Fd)
			if id == 0 {
				return // stop
			}
			w.mu.Lock()
			cs := w.mu.conns[id]
			w.mu.Unlock()
			if cs != nil {
				cs.lp.push(delivery{cs: cs, kind: deliverPeerClosed, watch: id})
			}
		}
	}
}

// fd is the watch's epoll descriptor, -1 for none.
func (w *peerWatch) fd() int {
	if w == nil {
		return -1
	}
	return w.epfd
}

// stop ends the watch once nothing can add to it any more.
func (w *peerWatch) stop() {
	if w == nil {
		return
	}
	one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	_, _ = unix.Write(w.wake, one)
	<-w.done
	unix.Close(w.wake)
	unix.Close(w.epfd)
}
