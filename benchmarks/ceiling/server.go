package ceiling

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/dflockd-ng/dflockd/internal/gnetwrite"
	"github.com/panjf2000/gnet/v2"
)

// Server is a running ceiling server.
type Server struct {
	addr string
	eng  gnet.Engine
	done chan error // Run's result
}

// handler is the gnet event handler. booted is closed in OnBoot, when eng
// becomes valid.
type handler struct {
	gnet.BuiltinEventEngine
	eng    gnet.Engine
	booted chan struct{}
}

// conn is a connection's state, touched only by its event loop.
type conn struct {
	out []byte // replies of one OnTraffic, written at once
}

// Start serves on addr ("127.0.0.1:0" picks a free port) with loops event
// loops (0 = one per CPU) and returns once the listener is up.
func Start(addr string, loops int) (*Server, error) {
	h := &handler{booted: make(chan struct{})}
	s := &Server{done: make(chan error, 1)}
	go func() {
		s.done <- gnet.Run(h, "tcp://"+addr,
			gnet.WithMulticore(true),
			gnet.WithNumEventLoop(loops),
			gnet.WithReuseAddr(true),
			gnet.WithTCPNoDelay(gnet.TCPNoDelay),
			gnet.WithLogger(quietLogger{}))
	}()
	select {
	case <-h.booted:
	case err := <-s.done:
		return nil, fmt.Errorf("ceiling: listen %s: %w", addr, err)
	case <-time.After(10 * time.Second):
		return nil, errors.New("ceiling: engine did not boot within 10 s")
	}
	s.eng = h.eng
	real, err := boundAddr(h.eng)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.addr = real
	return s, nil
}

// Addr returns the address the server listens on, with the real port.
func (s *Server) Addr() string { return s.addr }

// Close stops the engine and waits for it. It takes up to ~0.5 s because
// gnet's Engine.Stop polls for shutdown every 500 ms.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.eng.Stop(ctx)
	select {
	case <-s.done:
	case <-ctx.Done():
		return errors.New("ceiling: engine did not stop within 10 s")
	}
	return err
}

// boundAddr asks the kernel which port the listener got: gnet does not
// report it, and the caller may have asked for port 0.
func boundAddr(eng gnet.Engine) (string, error) {
	fd, err := eng.Dup()
	if err != nil {
		return "", fmt.Errorf("ceiling: dup listener: %w", err)
	}
	defer syscall.Close(fd)
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		return "", fmt.Errorf("ceiling: getsockname: %w", err)
	}
	switch a := sa.(type) {
	case *syscall.SockaddrInet4:
		return net.JoinHostPort(net.IP(a.Addr[:]).String(), fmt.Sprint(a.Port)), nil
	case *syscall.SockaddrInet6:
		return net.JoinHostPort(net.IP(a.Addr[:]).String(), fmt.Sprint(a.Port)), nil
	}
	return "", fmt.Errorf("ceiling: listener has address %T", sa)
}

func (h *handler) OnBoot(eng gnet.Engine) gnet.Action {
	h.eng = eng
	close(h.booted)
	return gnet.None
}

func (h *handler) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	c.SetContext(&conn{out: make([]byte, 0, 512)})
	return nil, gnet.None
}

// OnTraffic answers every complete request buffered on c with one Discard
// and one Write, so a pipelined burst costs one write(2).
func (h *handler) OnTraffic(c gnet.Conn) gnet.Action {
	st := c.Context().(*conn)
	// buf aliases gnet's buffers; it dies at Discard or when OnTraffic
	// returns, whichever comes first. Replies are built from it before then.
	buf, _ := c.Peek(-1)
	out := st.out[:0]
	consumed := 0
	action := gnet.None
	for {
		cmd, _, arg, n, err := nextFrame(buf[consumed:])
		if err != nil {
			out = append(out, "error\n"...)
			action = gnet.Close
			break
		}
		if n == 0 {
			break
		}
		consumed += n
		out = appendReply(out, cmd, arg)
	}
	// Discard(0) would drop everything buffered, partial request included.
	if consumed > 0 {
		_, _ = c.Discard(consumed)
	}
	if len(out) > 0 {
		gnetwrite.Write(c, out) // as dflockd-ng writes; gnet copies what the socket does not take
	}
	st.out = out
	return action
}

// quietLogger drops gnet's informational logging; errors still matter to
// the caller through Run's result.
type quietLogger struct{}

func (quietLogger) Debugf(string, ...any) {}
func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Warnf(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("ceiling: gnet fatal: "+format, args...))
}
