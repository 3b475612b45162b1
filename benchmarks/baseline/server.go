package baseline

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config tunes the server. Zero values mean dflockd's defaults.
type Config struct {
	MaxLocks      int           // distinct keys (locks + semaphores); default 1024
	ReadTimeout   time.Duration // per line, also the idle timeout; default 23 s
	WriteTimeout  time.Duration // per reply; default 5 s; negative disables
	DefaultLease  time.Duration // lease when a request names none; default 33 s
	SweepInterval time.Duration // lease enforcement period; default 1 s
	GCInterval    time.Duration // idle-key collection period; default 5 s
	GCMaxIdle     time.Duration // a key idle this long is forgotten; default 60 s
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.MaxLocks == 0 {
		c.MaxLocks = 1024
	}
	def(&c.ReadTimeout, 23*time.Second)
	def(&c.WriteTimeout, 5*time.Second)
	def(&c.DefaultLease, 33*time.Second)
	def(&c.SweepInterval, time.Second)
	def(&c.GCInterval, 5*time.Second)
	def(&c.GCMaxIdle, 60*time.Second)
	return c
}

// Protocol limits, from dflockd.
const (
	maxLine    = 256  // payload bytes per request line (CRs counted)
	readBuffer = 4096 // dflockd's bufio.Reader size
)

// Server is a running baseline server.
type Server struct {
	cfg    Config
	ln     net.Listener
	tab    *table
	quit   chan struct{}
	nextID atomic.Uint64
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		conns  map[net.Conn]struct{}
		closed bool
	}
}

// Start listens on addr ("127.0.0.1:0" picks a free port) and serves until
// Close.
func Start(addr string, cfg Config) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	s := &Server{cfg: cfg.withDefaults(), ln: ln, quit: make(chan struct{})}
	s.tab = newTable(s.cfg.MaxLocks, s.quit)
	s.mu.conns = map[net.Conn]struct{}{}
	s.wg.Add(2)
	go s.accept()
	go s.housekeeping()
	return s, nil
}

// Addr returns the listening address with the real port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops accepting, cancels waiting acquires, closes every connection
// and waits for all goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.closed = true
	close(s.quit)
	err := s.ln.Close()
	for c := range s.mu.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return // listener closed
		}
		s.mu.Lock()
		if s.mu.closed {
			s.mu.Unlock()
			_ = nc.Close()
			return
		}
		s.mu.conns[nc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(nc, s.nextID.Add(1))
	}
}

// housekeeping runs the lease sweeper and the idle-key GC.
func (s *Server) housekeeping() {
	defer s.wg.Done()
	sweep := time.NewTicker(s.cfg.SweepInterval)
	defer sweep.Stop()
	gc := time.NewTicker(s.cfg.GCInterval)
	defer gc.Stop()
	for {
		select {
		case now := <-sweep.C:
			s.tab.sweep(now)
		case now := <-gc.C:
			s.tab.gc(now, s.cfg.GCMaxIdle)
		case <-s.quit:
			return
		}
	}
}

var errLineTooLong = errors.New("baseline: request line too long")

// serve is the connection's goroutine: read a request, execute it, write
// the reply, repeat. A blocking acquire holds up everything pipelined
// behind it, as in dflockd.
func (s *Server) serve(nc net.Conn, id uint64) {
	defer s.wg.Done()
	defer func() {
		s.tab.disconnect(id)
		s.mu.Lock()
		delete(s.mu.conns, nc)
		s.mu.Unlock()
		_ = nc.Close()
	}()
	br := bufio.NewReaderSize(nc, readBuffer)
	out := make([]byte, 0, 64)
	for {
		var lines [3]string
		for i := range lines {
			line, err := s.readLine(nc, br)
			if err != nil {
				var ne net.Error
				if errors.Is(err, errLineTooLong) || errors.As(err, &ne) && ne.Timeout() {
					_ = s.write(nc, append(out[:0], "error\n"...))
				}
				return
			}
			lines[i] = line
		}
		out = s.dispatch(out[:0], id, lines[0], lines[1], lines[2])
		out = append(out, '\n')
		if s.write(nc, out) != nil {
			return
		}
	}
}

// readLine reads one LF-terminated line under a fresh read deadline and
// returns it without the LF and trailing CRs.
func (s *Server) readLine(nc net.Conn, br *bufio.Reader) (string, error) {
	if err := nc.SetReadDeadline(time.Now().Add(s.cfg.ReadTimeout)); err != nil {
		return "", err
	}
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		// Drain the rest of the line (bounded by the deadline), then fail.
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = br.ReadSlice('\n')
		}
		if err != nil {
			return "", err
		}
		return "", errLineTooLong
	}
	if err != nil {
		if len(line) > 0 && errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return "", err
	}
	line = line[:len(line)-1]
	if len(line) > maxLine {
		return "", errLineTooLong
	}
	return strings.TrimRight(string(line), "\r"), nil
}

// write sends one reply under the write deadline, then clears it.
func (s *Server) write(nc net.Conn, b []byte) error {
	if s.cfg.WriteTimeout > 0 {
		if err := nc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout)); err != nil {
			return err
		}
	}
	if _, err := nc.Write(b); err != nil {
		return err
	}
	if s.cfg.WriteTimeout > 0 {
		return nc.SetWriteDeadline(time.Time{})
	}
	return nil
}

// dispatch executes one request and appends its reply (without LF).
func (s *Server) dispatch(dst []byte, conn uint64, cmd, key, arg string) []byte {
	switch cmd {
	case "ping":
		return append(dst, "ok"...)
	case "l", "sl", "r", "sr", "n", "sn":
	default:
		return append(dst, "error"...)
	}
	if key == "" || strings.ContainsAny(key, " \t\r\n") {
		return append(dst, "error"...)
	}
	ns := "lock:"
	if cmd[0] == 's' {
		ns = "sem:"
	}
	key = ns + key
	switch cmd {
	case "l", "sl":
		timeout, limit, lease, ok := s.parseAcquire(cmd == "sl", arg)
		if !ok {
			return append(dst, "error"...)
		}
		h, err := s.tab.acquire(key, limit, timeout, lease, conn)
		if err != nil {
			return append(dst, err.Error()...)
		}
		dst = append(dst, "ok "...)
		dst = append(dst, h.token...)
		dst = append(dst, ' ')
		return strconv.AppendInt(dst, int64(lease/time.Second), 10)
	case "r", "sr":
		tok := strings.TrimSpace(arg)
		if tok == "" || s.tab.release(key, tok) != nil {
			return append(dst, "error"...)
		}
		return append(dst, "ok"...)
	default: // n, sn
		f := strings.Fields(arg)
		lease := s.cfg.DefaultLease
		if len(f) < 1 || len(f) > 2 {
			return append(dst, "error"...)
		}
		if len(f) == 2 {
			v, err := strconv.Atoi(f[1])
			if err != nil || v <= 0 {
				return append(dst, "error"...)
			}
			lease = time.Duration(v) * time.Second
		}
		if s.tab.renew(key, f[0], lease) != nil {
			return append(dst, "error"...)
		}
		dst = append(dst, "ok "...)
		return strconv.AppendInt(dst, int64(lease/time.Second), 10)
	}
}

// parseAcquire parses "<timeout> [<lease>]" (l) or
// "<timeout> <limit> [<lease>]" (sl).
func (s *Server) parseAcquire(sem bool, arg string) (timeout time.Duration, limit int, lease time.Duration, ok bool) {
	f := strings.Fields(arg)
	min := 1
	if sem {
		min = 2
	}
	if len(f) < min || len(f) > min+1 {
		return 0, 0, 0, false
	}
	t, err := strconv.Atoi(f[0])
	if err != nil || t < 0 {
		return 0, 0, 0, false
	}
	limit = 1
	if sem {
		if limit, err = strconv.Atoi(f[1]); err != nil || limit <= 0 {
			return 0, 0, 0, false
		}
	}
	lease = s.cfg.DefaultLease
	if len(f) == min+1 {
		v, err := strconv.Atoi(f[min])
		if err != nil || v <= 0 {
			return 0, 0, 0, false
		}
		lease = time.Duration(v) * time.Second
	}
	return time.Duration(t) * time.Second, limit, lease, true
}
