package client

import (
	"context"
	"fmt"
	"sync"
)

// Client shares connections among goroutines: one per server, dialled on
// first use and dialled again once it has ended. It suits short requests
// (counters, KV, lists, signals, stats) from many goroutines; a request
// that blocks on the server holds up the others on its connection, so
// give blocking work a connection of its own (Dial, or the high-level
// types, which dial per hold). The zero Client talks to DefaultAddr.
type Client struct {
	Dialer    Dialer    // how to connect: TLS, auth, timeouts, cluster members
	Servers   []string  // shard servers, ignored in cluster mode; default DefaultAddr
	ShardFunc ShardFunc // picks a key's server; default CRC32Shard

	dialMu sync.Mutex // one dial at a time, so a burst of first uses dials once
	mu     struct {
		sync.Mutex
		conns  map[string]*Conn
		closed bool
	}
}

// addr is key's server, or "" (the cluster) in cluster mode.
func (cl *Client) addr(key string) string {
	if len(cl.Dialer.Members) > 0 {
		return ""
	}
	return pickServer(cl.Servers, cl.ShardFunc, key)
}

// Conn returns the shared connection to key's server, bound to ctx (see
// Conn.WithContext), dialling it if needed. Cancelling a request in flight ends the shared
// connection for everyone using it; the next Conn call dials anew.
func (cl *Client) Conn(ctx context.Context, key string) (*Conn, error) {
	addr := cl.addr(key)
	if c, err := cl.cached(ctx, addr); c != nil || err != nil {
		return c, err
	}
	cl.dialMu.Lock()
	defer cl.dialMu.Unlock()
	if c, err := cl.cached(ctx, addr); c != nil || err != nil {
		return c, err
	}
	c, err := cl.Dialer.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.mu.closed {
		c.Close()
		return nil, fmt.Errorf("%w: client closed", ErrClosed)
	}
	if cl.mu.conns == nil {
		cl.mu.conns = make(map[string]*Conn)
	}
	cl.mu.conns[addr] = c
	return c.WithContext(ctx), nil
}

// cached returns the open shared connection to addr bound to ctx, if any.
func (cl *Client) cached(ctx context.Context, addr string) (*Conn, error) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.mu.closed {
		return nil, fmt.Errorf("%w: client closed", ErrClosed)
	}
	if c := cl.mu.conns[addr]; c != nil && c.Err() == nil {
		return c.WithContext(ctx), nil
	}
	return nil, nil
}

// Dial opens a connection of its own to key's server, for blocking
// requests, two-phase acquires and subscriptions. The caller closes it.
func (cl *Client) Dial(ctx context.Context, key string) (*Conn, error) {
	return cl.Dialer.Dial(ctx, cl.addr(key))
}

// Close closes the shared connections; Conn fails afterwards. Connections
// from Dial are the caller's to close.
func (cl *Client) Close() error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.mu.closed = true
	for _, c := range cl.mu.conns {
		c.Close()
	}
	cl.mu.conns = nil
	return nil
}
