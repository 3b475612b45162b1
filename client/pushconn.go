package client

// pushConn is what SignalConn, WatchConn and LeaderConn share: a Conn
// whose push lines of one kind feed a channel.
type pushConn[T any] struct {
	conn *Conn
	sink *sink[T]
}

func newPushConn[T any](c *Conn, kind string, mk func(a, b string) T) pushConn[T] {
	s := newSink(c.c.d.PushBuffer, mk)
	c.c.addSink(kind, s)
	return pushConn[T]{conn: c, sink: s}
}

// Close closes the connection, which ends its subscriptions on the server
// and closes the event channel.
func (p *pushConn[T]) Close() error { return p.conn.Close() }

// Dropped returns how many pushes were dropped because the event channel
// was full (see Dialer.PushBuffer).
func (p *pushConn[T]) Dropped() uint64 { return p.sink.dropped.Load() }

// Conn returns the connection, for requests of other kinds on it.
func (p *pushConn[T]) Conn() *Conn { return p.conn }
