package client

// WatchEvent is one change to a watched key.
type WatchEvent struct {
	// Type is what happened: acquire, release, incr, decr, cset, kset,
	// kdel, kcas, lpush, rpush, lpop, rpop, blpop, brpop, elect, resign.
	Type string
	Key  string
}

// WatchConn is a connection used for key watches: Watch subscribes to a
// key or pattern (the syntax of signal patterns) and Events delivers the
// changes, including those the connection makes itself.
type WatchConn struct {
	pushConn[WatchEvent]
}

// NewWatchConn starts delivering c's watch pushes on Events. c remains
// usable for other requests; its context applies to Watch and Unwatch.
func NewWatchConn(c *Conn) *WatchConn {
	return &WatchConn{newPushConn(c, pushWatch, func(typ, key string) WatchEvent {
		return WatchEvent{Type: typ, Key: key}
	})}
}

// Watch subscribes to changes of the keys matching pattern.
func (wc *WatchConn) Watch(pattern string) error {
	return subscribe(wc.conn, "watch", pattern, nil)
}

// Unwatch removes a watch made with the same pattern.
func (wc *WatchConn) Unwatch(pattern string) error {
	return subscribe(wc.conn, "unwatch", pattern, nil)
}

// Events returns the channel of changes. It is closed when the connection
// ends.
func (wc *WatchConn) Events() <-chan WatchEvent { return wc.sink.ch }
