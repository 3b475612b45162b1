package fakedflockd

import (
	"bufio"
	"errors"
	"net"
	"strings"
	"sync"
	"time"
)

// Defaults of the real server that the fake mirrors.
const (
	defaultLease       = 33               // seconds, --default-lease-ttl
	defaultReadTimeout = 23 * time.Second // --read-timeout, armed per line
	authFailDelay      = 100 * time.Millisecond
)

// Options configures a Server; zero values mean the real server's defaults.
type Options struct {
	AuthToken    string        // when set, the first request must be auth with it
	DefaultLease int           // seconds granted when l or n omits a lease
	ReadTimeout  time.Duration // per-line read deadline
}

// Request is one frame as received.
type Request struct {
	Conn          int // connection number, from 1 in accept order
	Cmd, Key, Arg string
}

// Server is a running fake.
type Server struct {
	opts Options
	ln   net.Listener
	done chan struct{}
	wg   sync.WaitGroup

	mu struct {
		sync.Mutex
		locks    map[string]*lock
		conns    map[int]net.Conn
		nextConn int
		log      []Request
	}
}

// Start listens on a loopback port and serves until Close.
func Start(opts Options) (*Server, error) {
	if opts.DefaultLease == 0 {
		opts.DefaultLease = defaultLease
	}
	if opts.ReadTimeout == 0 {
		opts.ReadTimeout = defaultReadTimeout
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, ln: ln, done: make(chan struct{})}
	s.mu.locks = make(map[string]*lock)
	s.mu.conns = make(map[int]net.Conn)
	s.wg.Go(s.accept)
	return s, nil
}

// Addr is the host:port the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops accepting, drops every connection and waits for handlers.
func (s *Server) Close() {
	close(s.done)
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.mu.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Requests returns a copy of every frame received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.mu.log...)
}

func (s *Server) accept() {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.mu.nextConn++
		id := s.mu.nextConn
		s.mu.conns[id] = conn
		s.mu.Unlock()
		s.wg.Go(func() { s.serve(conn, id) })
	}
}

func (s *Server) serve(conn net.Conn, id int) {
	defer func() {
		conn.Close()
		s.mu.Lock()
		delete(s.mu.conns, id)
		s.dropConnLocked(id)
		s.mu.Unlock()
	}()
	r := bufio.NewReader(conn)
	authed := s.opts.AuthToken == ""
	for {
		req, err := s.readFrame(conn, r)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				conn.Write([]byte("error\n")) // code 10, then close
			}
			return
		}
		req.Conn = id
		s.mu.Lock()
		s.mu.log = append(s.mu.log, req)
		s.mu.Unlock()

		if !authed {
			if req.Cmd == "auth" && strings.TrimSpace(req.Arg) == s.opts.AuthToken {
				authed = true
				conn.Write([]byte("ok\n"))
				continue
			}
			conn.Write([]byte("error_auth\n"))
			time.Sleep(authFailDelay)
			return
		}
		if _, err := conn.Write([]byte(s.execute(id, req) + "\n")); err != nil {
			return
		}
	}
}

// readFrame reads the three lines of a request, each under its own read
// deadline as the real server does.
func (s *Server) readFrame(conn net.Conn, r *bufio.Reader) (Request, error) {
	var lines [3]string
	for i := range lines {
		if err := conn.SetReadDeadline(time.Now().Add(s.opts.ReadTimeout)); err != nil {
			return Request{}, err
		}
		line, err := r.ReadString('\n')
		if err != nil {
			return Request{}, err
		}
		lines[i] = strings.TrimRight(line, "\r\n")
	}
	return Request{Cmd: lines[0], Key: lines[1], Arg: lines[2]}, nil
}
