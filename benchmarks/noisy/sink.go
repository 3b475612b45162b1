package noisy

import (
	"bufio"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Sink is the control of the dials beyond the conns quota: the thinnest
// server a connection can have, which reads its auth (three lines) and
// closes it without a reply, as dflockd-ng does at the quota. A run whose
// dials go to a Sink (Config.DialAddr) started on the server's CPUs puts
// on the host everything those connections cost (the dialer, the kernel's
// work at both ends, a goroutine to read each) but dflockd-ng's own
// handling: beside the same run against dflockd-ng, it tells the server's
// part of what the dials do to another tenant from the host's.
type Sink struct {
	ln       net.Listener
	wg       sync.WaitGroup
	accepted atomic.Uint64
}

// StartSink listens on a loopback port.
func StartSink() (*Sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Sink{ln: ln}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// Addr is the sink's host:port.
func (s *Sink) Addr() string { return s.ln.Addr().String() }

// Accepted is the connections the sink took.
func (s *Sink) Accepted() uint64 { return s.accepted.Load() }

func (s *Sink) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return // closed by Stop
		}
		s.accepted.Add(1)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(dialWait))
			rd := bufio.NewReaderSize(c, 512)
			for range 3 {
				if _, err := rd.ReadSlice('\n'); err != nil {
					return
				}
			}
		}()
	}
}

// Stop closes the listener and waits for its connections, each of which
// ends by its deadline at the latest.
func (s *Sink) Stop() {
	_ = s.ln.Close()
	s.wg.Wait()
}
