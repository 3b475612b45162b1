package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"
)

// Defaults of a Dialer's zero fields.
const (
	// DefaultAddr is dflockd's default listen address.
	DefaultAddr = "127.0.0.1:6388"
	// DefaultDialTimeout bounds connecting, the TLS handshake and auth.
	DefaultDialTimeout = 10 * time.Second
	// DefaultKeepAlive is the idle time after which a ping is sent: well
	// under dflockd's default read timeout of 23 s, after which the server
	// drops a silent connection.
	DefaultKeepAlive = 10 * time.Second
	// DefaultMaxRedirects is how many not-leader redirects one request
	// follows in cluster mode.
	DefaultMaxRedirects = 3

	// tcpKeepAlive is the interval of TCP keepalive probes, which notice a
	// peer that vanished without closing.
	tcpKeepAlive = 30 * time.Second
)

// Dialer holds the settings for connecting; its zero value connects in
// plain TCP with the defaults above. TLS, auth and cluster mode apply to
// every connection it makes, including those made to follow a redirect.
type Dialer struct {
	// Timeout bounds connecting, the TLS handshake and auth together.
	// 0 means DefaultDialTimeout.
	Timeout time.Duration
	// TLSConfig, when not nil, makes every connection TLS. An empty
	// ServerName is taken from the address dialled.
	TLSConfig *tls.Config
	// AuthToken, when not empty, is sent with auth as the first request.
	// A server without auth configured answers auth with error and serves
	// everyone; that is accepted, since the connection is usable either way.
	AuthToken string
	// ReplyTimeout, when > 0, gives up the connection if a reply is later
	// than the request may block on the server (its timeout) plus this.
	// 0 waits as long as the request's context allows.
	ReplyTimeout time.Duration
	// KeepAlive is the idle time after which a ping is sent, so that the
	// server's read timeout does not end idle connections and their
	// subscriptions. 0 means DefaultKeepAlive; < 0 disables pings.
	KeepAlive time.Duration
	// Members turns on cluster mode: the addresses of the cluster's
	// members, as they advertise themselves in error_not_leader replies.
	// A refused request is resent to the leader the follower names only if
	// that address is listed here, and to the next member when the
	// follower knows no leader. Dialling "" tries the members in order.
	Members []string
	// MaxRedirects is how many redirects one request may follow before it
	// fails with a *NotLeaderError. 0 means DefaultMaxRedirects; < 0
	// follows none.
	MaxRedirects int
	// PushBuffer is how many unread pushes a consumer channel (Signals,
	// Events) holds before further ones are dropped and counted.
	// 0 means DefaultPushBuffer.
	PushBuffer int
}

// Dial connects to a dflockd server at addr (host:port) with the default
// settings: plain TCP, no auth, DefaultDialTimeout.
func Dial(addr string) (*Conn, error) {
	var d Dialer
	return d.Dial(context.Background(), addr)
}

// DialTLS connects to a dflockd server at addr over TLS configured by cfg.
func DialTLS(addr string, cfg *tls.Config) (*Conn, error) {
	d := Dialer{TLSConfig: cfg}
	return d.Dial(context.Background(), addr)
}

// Dial connects to addr and, when an auth token is set, authenticates. In
// cluster mode an empty addr tries each member in turn; otherwise it means
// DefaultAddr. ctx bounds the dial only, not the connection's life.
func (d *Dialer) Dial(ctx context.Context, addr string) (*Conn, error) {
	c := &conn{d: d.withDefaults(), done: make(chan struct{})}
	addrs := []string{addr}
	if addr == "" {
		addrs = []string{DefaultAddr}
		if len(c.d.Members) > 0 {
			addrs = c.d.Members
		}
	}
	var err error
	for _, a := range addrs {
		var s *session
		if s, err = c.d.dialSession(ctx, c, a); err == nil {
			c.mu.sess = s
			if c.d.KeepAlive > 0 {
				go c.keepAlive(c.d.KeepAlive)
			}
			return &Conn{c: c, ctx: context.Background()}, nil
		}
		if errors.Is(err, ErrAuth) || ctx.Err() != nil {
			break // the next member would say the same
		}
	}
	return nil, err
}

func (d *Dialer) withDefaults() Dialer {
	v := *d
	if v.Timeout <= 0 {
		v.Timeout = DefaultDialTimeout
	}
	if v.KeepAlive == 0 {
		v.KeepAlive = DefaultKeepAlive
	}
	if v.PushBuffer <= 0 {
		v.PushBuffer = DefaultPushBuffer
	}
	v.Members = append([]string(nil), v.Members...)
	return v
}

func (d *Dialer) redirectBudget() int {
	switch {
	case len(d.Members) == 0 || d.MaxRedirects < 0:
		return 0
	case d.MaxRedirects == 0:
		return DefaultMaxRedirects
	}
	return d.MaxRedirects
}

// dialSession opens one server connection for c: TCP, TLS, auth.
func (d *Dialer) dialSession(ctx context.Context, c *conn, addr string) (*session, error) {
	if d.AuthToken != "" {
		if err := checkFrame("auth", "_", d.AuthToken); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	nd := net.Dialer{KeepAlive: tcpKeepAlive}
	nc, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if d.TLSConfig != nil {
		cfg := d.TLSConfig
		if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
			cfg = cfg.Clone()
			if host, _, err := net.SplitHostPort(addr); err == nil {
				cfg.ServerName = host
			}
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		nc = tc
	}
	s := newSession(c, nc, addr)
	if d.AuthToken == "" {
		return s, nil
	}
	reply, err := s.roundTrip(ctx, []byte("auth\n_\n"+d.AuthToken+"\n"), 0)
	switch {
	case err != nil:
	case reply == statusOK, reply == statusError:
		return s, nil
	case reply == statusAuth:
		err = ErrAuth
	default:
		err = fmt.Errorf("%w to auth: %q", ErrProtocol, reply)
	}
	s.fail(fmt.Errorf("%w: %w", ErrClosed, err))
	return nil, err
}

// Authenticate sends auth with token on c. It returns ErrAuth for any
// answer but ok, as dflockd's client does; a server that requires a token
// then closes the connection. A Dialer's AuthToken authenticates as part
// of dialling instead.
func Authenticate(c *Conn, token string) error {
	if token == "" {
		return compatInvalid("dflockd: empty auth token")
	}
	reply, err := c.request("auth", "_", token)
	if err != nil {
		return err
	}
	if reply != statusOK {
		return ErrAuth
	}
	return nil
}
