package cluster

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// MinTokenLen is the shortest raft auth token accepted (spec §E.2:
// --raft-auth-token of at least 32 bytes).
const MinTokenLen = 32

// streamMagic opens every raft connection: the protocol and its version.
const streamMagic = "DFLKRAFT\x01"

// handshakeTimeout bounds the authentication of a raft connection.
const handshakeTimeout = 5 * time.Second

// Stream is the raft StreamLayer of a node: TCP, optionally TLS 1.3 with
// certificates verified both ways, and in every case a mutual HMAC-SHA256
// challenge-response over the shared token before raft sees a byte. A
// peer without the token can neither join nor inject entries; it is
// closed after the handshake fails. Without TLS the traffic after the
// handshake is not encrypted: use the TLS flags on untrusted networks.
type Stream struct {
	ln    net.Listener
	addr  net.Addr // what Addr reports: the advertised address, or ln's
	token []byte
	tls   *tls.Config // server side; nil: plain TCP
	dial  *tls.Config // client side
	onBad func(remote string, err error)
	ended func()

	conns chan net.Conn
	quit  chan struct{}
	once  sync.Once
}

// StreamConfig configures NewStream.
type StreamConfig struct {
	Token []byte
	// ServerTLS and ClientTLS, both or neither: raft's mutual TLS.
	ServerTLS, ClientTLS *tls.Config
	// OnRefused, if set, is told about each peer refused by the
	// handshake (logged by the caller, rate limited). A connection
	// closed before it sent a byte (a port probe, Node.PeerConnEnded's
	// own) is not refused: it is closed in silence.
	OnRefused func(remote string, err error)
	// OnEnded, if set, is called when an accepted peer connection ends
	// (its reader saw an error or the end): Node.PeerConnEnded.
	OnEnded func()
	// Advertise, if set, is the address Addr reports instead of the
	// listener's: raft sends it to the other members as this one's (the
	// leader's, in its heartbeats, which followers probe: quickfailover.go),
	// so it must be how they reach it, its --cluster-peers entry, not
	// an address bound on every interface. A DNS name stays a name: it
	// is resolved at each dial, so a member that comes back with a new
	// IP is found.
	Advertise raft.ServerAddress
}

// NewStream listens for raft peers on ln.
func NewStream(ln net.Listener, cfg StreamConfig) (*Stream, error) {
	if len(cfg.Token) < MinTokenLen {
		return nil, errors.New("cluster: the raft auth token must be at least 32 bytes")
	}
	if (cfg.ServerTLS == nil) != (cfg.ClientTLS == nil) {
		return nil, errors.New("cluster: raft TLS needs both the server and the client configuration")
	}
	var addr net.Addr = ln.Addr()
	if cfg.Advertise != "" {
		addr = advertised(cfg.Advertise)
	}
	s := &Stream{ln: ln, addr: addr, token: cfg.Token, tls: cfg.ServerTLS, dial: cfg.ClientTLS, onBad: cfg.OnRefused,
		ended: cfg.OnEnded, conns: make(chan net.Conn), quit: make(chan struct{})}
	if s.onBad == nil {
		s.onBad = func(string, error) {}
	}
	go s.acceptLoop()
	return s, nil
}

func (s *Stream) acceptLoop() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.quit:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go func() {
			ac, err := s.authAccepted(c)
			if err != nil {
				if !errors.Is(err, io.EOF) { // else closed before a byte
					s.onBad(c.RemoteAddr().String(), err)
				}
				_ = c.Close()
				return
			}
			if s.ended != nil {
				ac = &endWatch{Conn: ac, ended: s.ended}
			}
			select {
			case s.conns <- ac:
			case <-s.quit:
				_ = ac.Close()
			}
		}()
	}
}

// Accept returns the next authenticated peer connection.
func (s *Stream) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case <-s.quit:
		return nil, net.ErrClosed
	}
}

// Close stops accepting.
func (s *Stream) Close() error {
	s.once.Do(func() { close(s.quit) })
	return s.ln.Close()
}

// Addr is the address raft advertises: StreamConfig.Advertise, or the
// listening address.
func (s *Stream) Addr() net.Addr { return s.addr }

// advertised is an address as configured, a host name perhaps: raft reads
// only its String.
type advertised string

func (a advertised) Network() string { return "tcp" }
func (a advertised) String() string  { return string(a) }

// Dial connects to a peer and authenticates both ways.
func (s *Stream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.Dial("tcp", string(addr))
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	if s.dial != nil {
		tc := tls.Client(c, s.dial)
		if err := tc.Handshake(); err != nil {
			_ = c.Close()
			return nil, err
		}
		c = tc
	}
	if err := s.challenge(c, true); err != nil {
		_ = c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

func (s *Stream) authAccepted(c net.Conn) (net.Conn, error) {
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	if s.tls != nil {
		tc := tls.Server(c, s.tls)
		if err := tc.Handshake(); err != nil {
			return nil, err
		}
		c = tc
	}
	if err := s.challenge(c, false); err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// errBadPeer: the peer does not hold the token.
var errBadPeer = errors.New("cluster: raft peer failed authentication")

// challenge runs the mutual proof of the token: each side sends a fresh
// nonce, and proves the token by a MAC over both nonces and its role, so
// that neither a replayed nor a reflected proof passes. The dialer proves
// itself first.
func (s *Stream) challenge(c net.Conn, dialer bool) error {
	var mine [32]byte
	if _, err := rand.Read(mine[:]); err != nil {
		return err
	}
	hello := append([]byte(streamMagic), mine[:]...)
	theirs := make([]byte, len(hello))
	// The dialer speaks first; the acceptor answers only a hello of this
	// protocol, so that a stranger gets nothing at all.
	if dialer {
		if _, err := c.Write(hello); err != nil {
			return err
		}
	}
	if _, err := io.ReadFull(c, theirs); err != nil {
		return err
	}
	if string(theirs[:len(streamMagic)]) != streamMagic {
		return errBadPeer
	}
	if !dialer {
		if _, err := c.Write(hello); err != nil {
			return err
		}
	}
	peer := theirs[len(streamMagic):]
	proof := func(role string, a, b []byte) []byte {
		m := hmac.New(sha256.New, s.token)
		m.Write([]byte(role))
		m.Write(a)
		m.Write(b)
		return m.Sum(nil)
	}
	if dialer {
		if _, err := c.Write(proof("dialer", peer, mine[:])); err != nil {
			return err
		}
		got := make([]byte, sha256.Size)
		if _, err := io.ReadFull(c, got); err != nil {
			return err
		}
		if !hmac.Equal(got, proof("acceptor", mine[:], peer)) {
			return errBadPeer
		}
		return nil
	}
	got := make([]byte, sha256.Size)
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if !hmac.Equal(got, proof("dialer", mine[:], peer)) {
		return errBadPeer
	}
	_, err := c.Write(proof("acceptor", peer, mine[:]))
	return err
}

// endWatch is an accepted peer connection that reports its end: the first
// read that fails (the peer closed it, or it broke) calls ended once.
type endWatch struct {
	net.Conn
	once  sync.Once
	ended func()
}

func (c *endWatch) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			c.once.Do(c.ended)
		}
	}
	return n, err
}
