package client

import "sync/atomic"

// DefaultPushBuffer is how many unread pushes of one kind a consumer's
// channel holds when Dialer.PushBuffer is 0. dflockd's server keeps 64
// per connection; the client holds more so that a short pause in the
// consumer loses nothing.
const DefaultPushBuffer = 256

// pushSink receives the push lines of one kind for one consumer.
type pushSink interface {
	deliver(a, b string)
	close()
}

// sink is a pushSink feeding a typed channel. The reader must never block
// (it also carries replies), so a full channel drops the push and counts
// it; dropped is what Dropped methods report.
type sink[T any] struct {
	ch      chan T
	make    func(a, b string) T
	dropped atomic.Uint64
}

func newSink[T any](size int, mk func(a, b string) T) *sink[T] {
	return &sink[T]{ch: make(chan T, size), make: mk}
}

func (s *sink[T]) deliver(a, b string) {
	select {
	case s.ch <- s.make(a, b):
	default:
		s.dropped.Add(1)
	}
}

func (s *sink[T]) close() { close(s.ch) }

// addSink registers s for pushes of kind. On a connection that has ended
// already, s is closed at once, so its channel reads as closed.
func (c *conn) addSink(kind string, s pushSink) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.err != nil {
		s.close()
		return
	}
	if c.mu.sinks == nil {
		c.mu.sinks = make(map[string][]pushSink)
	}
	c.mu.sinks[kind] = append(c.mu.sinks[kind], s)
}

// removeSink unregisters s and closes its channel.
func (c *conn) removeSink(kind string, s pushSink) {
	c.mu.Lock()
	defer c.mu.Unlock()
	list := c.mu.sinks[kind]
	for i, x := range list {
		if x == s {
			c.mu.sinks[kind] = append(list[:i:i], list[i+1:]...)
			s.close()
			return
		}
	}
}

// deliver hands one push to every sink of its kind. It runs on the reader
// goroutine and holds mu so that no sink is closed while being fed.
func (c *conn) deliver(kind, a, b string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.mu.sinks[kind] {
		s.deliver(a, b)
	}
}
