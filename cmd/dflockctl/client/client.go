package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Limits and defaults.
const (
	// DefaultDialTimeout bounds connection set-up when Config leaves it 0.
	DefaultDialTimeout = 5 * time.Second
	// DefaultReplyTimeout bounds the wait for a reply that the server
	// produces without blocking; 0 in Config means this.
	DefaultReplyTimeout = 10 * time.Second

	// maxLine is the server's cap on a request line (longer lines are an
	// error that closes the connection), so we refuse them up front.
	maxLine = 256
	// maxAuthLine is the larger cap V2 servers allow for the auth token.
	maxAuthLine = 64 << 10
	// maxReply bounds one reply line: stats JSON grows with the key count,
	// but a peer that never sends LF must not exhaust memory.
	maxReply = 16 << 20
	// maxTimeout keeps timeout+slack far from time.Duration overflow; it is
	// still over 60 years.
	maxTimeout = 1 << 31
)

// Config says where and how to connect. The zero value of each timeout
// means its default.
type Config struct {
	Addr         string // host:port
	AuthToken    string // sent with auth first when not empty
	DialTimeout  time.Duration
	ReplyTimeout time.Duration
}

// Grant is a held lock.
type Grant struct {
	Token string // 32 hex digits; proves ownership for renew and release
	Lease int    // seconds the lease lasts unless renewed
}

// Client is one connection to a dflockd server.
type Client struct {
	replyTimeout time.Duration

	mu struct {
		sync.Mutex
		conn   net.Conn
		r      *bufio.Reader
		buf    []byte // request encoding, reused
		broken error  // why the connection was given up; nil while usable
	}
}

// Dial connects to cfg.Addr and, when cfg.AuthToken is set, authenticates.
// A server without auth configured answers auth with a plain error and keeps
// the connection; that is accepted, since such a server serves everyone.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.ReplyTimeout == 0 {
		cfg.ReplyTimeout = DefaultReplyTimeout
	}
	if cfg.AuthToken != "" {
		if len(cfg.AuthToken) > maxAuthLine || strings.ContainsAny(cfg.AuthToken, "\r\n") {
			return nil, errors.New("client: auth token must be one line of at most 64 KiB")
		}
	}
	d := net.Dialer{Timeout: cfg.DialTimeout}
	conn, err := d.DialContext(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	c := &Client{replyTimeout: cfg.ReplyTimeout}
	c.mu.conn = conn
	c.mu.r = bufio.NewReader(conn)
	if cfg.AuthToken == "" {
		return c, nil
	}
	reply, err := c.roundTrip(ctx, "auth", "_", cfg.AuthToken, 0)
	switch {
	case err != nil: // ErrAuth when the token was rejected
		c.Close()
		return nil, err
	case reply == string(StatusOK), reply == string(StatusError):
		return c, nil
	default:
		c.Close()
		return nil, fmt.Errorf("%w to auth: %q", ErrProtocol, reply)
	}
}

// Close closes the connection. A dflockd server then releases whatever the
// connection still held (unless it runs with auto-release disabled).
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.broken == nil {
		c.mu.broken = fmt.Errorf("%w: closed", ErrBroken)
	}
	return c.mu.conn.Close()
}

// Lock sends l: it waits up to timeout seconds (0 = try once) for key and
// asks for a lease of lease seconds (0 = the server's default). The server
// may return a lease other than the one asked for; Grant carries the real
// one. A timeout reply is ErrTimeout. Cancelling ctx abandons the wait and
// the connection.
func (c *Client) Lock(ctx context.Context, key string, timeout, lease int) (Grant, error) {
	if err := checkKey(key); err != nil {
		return Grant{}, err
	}
	if timeout < 0 || timeout > maxTimeout || lease < 0 || lease > maxTimeout {
		return Grant{}, fmt.Errorf("client: timeout %d or lease %d out of range", timeout, lease)
	}
	arg := strconv.Itoa(timeout)
	if lease > 0 {
		arg += " " + strconv.Itoa(lease)
	}
	reply, err := c.roundTrip(ctx, "l", key, arg, time.Duration(timeout)*time.Second)
	if err != nil {
		return Grant{}, err
	}
	f := strings.Fields(reply)
	switch {
	case reply == string(StatusTimeout):
		return Grant{}, ErrTimeout
	case len(f) == 0 || f[0] != string(StatusOK):
		return Grant{}, &ReplyError{Cmd: "l", Reply: reply}
	case len(f) < 3: // "ok T L", plus a fence field on some servers
		return Grant{}, fmt.Errorf("%w to l: %q", ErrProtocol, reply)
	}
	n, err := strconv.Atoi(f[2])
	if err != nil || n <= 0 {
		return Grant{}, fmt.Errorf("%w to l: %q", ErrProtocol, reply)
	}
	return Grant{Token: f[1], Lease: n}, nil
}

// Renew sends n: it resets the lease of token on key to lease seconds from
// now (0 = the server's default, not the lease asked for at acquire) and
// returns the seconds the server reports. A lost lease is a *ReplyError.
func (c *Client) Renew(ctx context.Context, key, token string, lease int) (int, error) {
	if err := checkKey(key); err != nil {
		return 0, err
	}
	if err := checkToken(token); err != nil {
		return 0, err
	}
	arg := token
	if lease > 0 {
		arg += " " + strconv.Itoa(lease)
	}
	reply, err := c.roundTrip(ctx, "n", key, arg, 0)
	if err != nil {
		return 0, err
	}
	f := strings.Fields(reply)
	if len(f) == 0 || f[0] != string(StatusOK) {
		return 0, &ReplyError{Cmd: "n", Reply: reply}
	}
	if len(f) < 2 { // "ok R", plus a fence field on some servers
		return 0, fmt.Errorf("%w to n: %q", ErrProtocol, reply)
	}
	n, err := strconv.Atoi(f[1])
	if err != nil {
		return 0, fmt.Errorf("%w to n: %q", ErrProtocol, reply)
	}
	return n, nil
}

// Release sends r for token on key.
func (c *Client) Release(ctx context.Context, key, token string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := checkToken(token); err != nil {
		return err
	}
	return c.expectOK(ctx, "r", key, token)
}

// Ping sends ping. Servers before v1.14 have no ping and answer error.
func (c *Client) Ping(ctx context.Context) error {
	return c.expectOK(ctx, "ping", "_", "_")
}

// Stats sends stats and returns the JSON document that follows "ok ".
func (c *Client) Stats(ctx context.Context) (string, error) {
	reply, err := c.roundTrip(ctx, "stats", "_", "_", 0)
	if err != nil {
		return "", err
	}
	json, ok := strings.CutPrefix(reply, string(StatusOK)+" ")
	if !ok {
		return "", &ReplyError{Cmd: "stats", Reply: reply}
	}
	return json, nil
}

func (c *Client) expectOK(ctx context.Context, cmd, key, arg string) error {
	reply, err := c.roundTrip(ctx, cmd, key, arg, 0)
	if err != nil {
		return err
	}
	if reply != string(StatusOK) {
		return &ReplyError{Cmd: cmd, Reply: reply}
	}
	return nil
}

// longAgo is a deadline in the past: setting it makes blocked I/O return.
var longAgo = time.Unix(1, 0)

// roundTrip writes one request and reads its reply line (without the line
// end). wait is how long the server may legitimately take before answering
// (a blocking l); the reply timeout is added on top.
func (c *Client) roundTrip(ctx context.Context, cmd, key, arg string, wait time.Duration) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.broken != nil {
		return "", c.mu.broken
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	conn := c.mu.conn
	if err := conn.SetDeadline(time.Now().Add(wait + c.replyTimeout)); err != nil {
		return "", c.breakLocked(err)
	}
	// Cancelling ctx pushes the deadline into the past to unblock us. If
	// the callback has already started when we are done, wait for it so it
	// cannot clobber the next request's deadline.
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		conn.SetDeadline(longAgo)
		close(fired)
	})
	defer func() {
		if !stop() {
			<-fired
		}
	}()

	b := append(c.mu.buf[:0], cmd...)
	b = append(b, '\n')
	b = append(b, key...)
	b = append(b, '\n')
	b = append(b, arg...)
	b = append(b, '\n')
	c.mu.buf = b
	if _, err := conn.Write(b); err != nil {
		return "", c.failLocked(ctx, cmd, err)
	}
	line, err := c.readLineLocked()
	if err != nil {
		return "", c.failLocked(ctx, cmd, err)
	}
	if line == string(StatusAuth) {
		// The answer to anything (auth included) sent before a valid
		// auth on a server that requires one; the server then hangs up.
		return "", c.breakLocked(ErrAuth)
	}
	return line, nil
}

// readLineLocked reads one reply line, dropping LF and a trailing CR.
func (c *Client) readLineLocked() (string, error) {
	var line []byte
	for {
		frag, err := c.mu.r.ReadSlice('\n')
		line = append(line, frag...)
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return "", err
		}
		if len(line) > maxReply {
			return "", fmt.Errorf("%w: reply longer than %d bytes", ErrProtocol, maxReply)
		}
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return string(line), nil
}

// failLocked gives up the connection after an I/O error in cmd, reporting
// the context's error instead when cancellation caused it.
func (c *Client) failLocked(ctx context.Context, cmd string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		err = ctxErr
	}
	return c.breakLocked(fmt.Errorf("client: %s: %w", cmd, err))
}

func (c *Client) breakLocked(err error) error {
	c.mu.broken = fmt.Errorf("%w: %w", ErrBroken, err)
	c.mu.conn.Close()
	return err
}

// checkKey rejects keys every server version refuses: empty, containing
// white space the server splits on, or longer than a line may be.
func checkKey(key string) error {
	if key == "" || len(key) > maxLine || strings.ContainsAny(key, " \t\r\n") {
		return fmt.Errorf("client: invalid key %q: want 1–%d bytes without space, tab, CR or LF", key, maxLine)
	}
	return nil
}

func checkToken(token string) error {
	if token == "" || len(token) > maxLine || strings.ContainsAny(token, " \t\r\n") {
		return fmt.Errorf("client: invalid token %q", token)
	}
	return nil
}
