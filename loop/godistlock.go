package loop

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/panjf2000/gnet/v2"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/parse"
)

// This file serves the godistlock client protocol (parse/godistlock.go) on
// the optional second listener, Config.GodistlockAddr. Its connections are
// ordinary conns of the same loops and engine, marked by a non-nil gd: the
// locks are dflockd's lock namespace, so both protocols share one FIFO per
// key and one fence allocator.
//
// Differences from a dflockd connection, and why:
//   - Requests carry nonces, so replies need not come in request order: an
//     ON that has to wait is parked in the engine under a tag and the
//     connection goes on answering what follows it. The GIVE comes later
//     through the loop's inbox like any cross-loop delivery.
//   - OFF gets no reply, as with godistlock's own server, so a client
//     written for that server never sees an answer it did not expect.
//     Replies on one connection are written in order, so anything sent
//     after OFF is answered after the release took effect. If the OFF
//     ends an ON of this connection that is still waiting (or was granted
//     and its GIVE not yet sent), that ON is answered "NO <its nonce>".
//   - REFRESH answers "GIVE <nonce> <fence>" (still yours, same fence, the
//     lease restarted) or "NO <nonce>" (this connection does not hold the
//     lock under that fence any more): the two words a client already reads.
//   - An idle connection has no read deadline: godistlock clients keep one
//     connection and may sit silent while holding or waiting for locks.
//     Only a line that has started must end within --read-timeout.
//   - Malformed input and protocol failures answer "ERR <nonce> <reason>"
//     and close; the nonce is "-" when it cannot be known.

// maxGodistlockPending bounds the parked ONs of one connection: each keeps
// a copy of its nonce, and nothing else bounds how many a client pipelines.
const maxGodistlockPending = 4096

// gdState is a godistlock connection's protocol state; loop-confined.
type gdState struct {
	// parked maps the tag of each waiting ON to a copy of its nonce.
	parked  map[uint32][]byte
	lastTag uint32
	// partial: a line has started and not ended; only then does the read
	// deadline apply.
	partial bool
}

func newGDState() *gdState { return &gdState{parked: make(map[uint32][]byte)} }

// newTag returns a non-zero tag no parked ON of this connection uses.
func (g *gdState) newTag() uint32 {
	for {
		g.lastTag++
		if _, used := g.parked[g.lastTag]; g.lastTag != 0 && !used {
			return g.lastTag
		}
	}
}

// gdDefaults fills in the HELLO identity. The host name is the natural
// <id> (godistlock suggests the FQDN); one with a blank cannot be a field.
func gdDefaults(cfg *Config) {
	if cfg.GodistlockID == "" {
		cfg.GodistlockID, _ = os.Hostname()
		if cfg.GodistlockID == "" || strings.ContainsAny(cfg.GodistlockID, " \t\r\n") {
			cfg.GodistlockID = "dflockd-ng"
		}
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
}

// listenAddrs returns the gnet listener addresses and records which local
// port is the godistlock one, for OnOpen.
func (s *Server) listenAddrs() ([]string, error) {
	if s.cfg.GodistlockAddr == "" {
		return []string{s.cfg.Addr}, nil
	}
	_, port, err := net.SplitHostPort(strings.TrimPrefix(s.cfg.GodistlockAddr, "tcp://"))
	if err == nil {
		s.gdPort, err = strconv.Atoi(port)
	}
	if err != nil || s.gdPort <= 0 {
		return nil, fmt.Errorf("loop: godistlock address %q needs a fixed TCP port", s.cfg.GodistlockAddr)
	}
	return []string{s.cfg.Addr, s.cfg.GodistlockAddr}, nil
}

// isGodistlock reports whether c came in on the godistlock listener.
func (s *Server) isGodistlock(c gnet.Conn) bool {
	if s.gdPort == 0 {
		return false
	}
	a, ok := c.LocalAddr().(*net.TCPAddr)
	return ok && a.Port == s.gdPort
}

// gdTraffic is onTraffic for godistlock: every complete line is executed
// and all replies go out with one write.
func (cs *conn) gdTraffic() gnet.Action {
	c := cs.c
	buf, _ := c.Peek(-1)
	out := cs.lp.out[:0]
	off, lines := 0, 0
	action := gnet.None
	more, over := false, false
	unsent := c.OutboundBuffered()
	for action == gnet.None {
		if len(out) >= replyBudget {
			more = true
			break
		}
		if unsent+len(out) >= maxUnsent {
			over = true // backpressure.go
			break
		}
		req, n, err := parse.NextGodistlock(buf[off:])
		if errors.Is(err, parse.ErrIncomplete) {
			break
		}
		off += n
		lines++
		if err != nil {
			// A malformed line or one over the cap: ERR and close.
			out = parse.AppendGodistlockErr(out, req.Nonce, err)
			action = gnet.Close
			break
		}
		var stop bool
		if out, stop = cs.gdExec(out, &req); stop {
			action = gnet.Close
		}
	}
	if action == gnet.None {
		cs.gdNoteProgress(len(buf) > off, lines > 0)
	}
	if off > 0 {
		_, _ = c.Discard(off)
	}
	if len(out) > 0 {
		cs.write(out)
	}
	cs.lp.out = out[:0]
	if over && action == gnet.None {
		cs.pause()
		return gnet.None
	}
	if more && action == gnet.None {
		_ = c.Wake(nil)
	}
	return action
}

// gdNoteProgress starts the read deadline when a line begins (or another
// one follows a completed line) and stops it when no partial line is left.
func (cs *conn) gdNoteProgress(partial, completed bool) {
	if partial && (!cs.gd.partial || completed) {
		cs.deadline = cs.srv.clock.Now().After(cs.srv.rtMs)
	}
	cs.gd.partial = partial
}

// gdExec runs one request and appends its reply, if it has one yet. stop
// asks the caller to close the connection after writing.
func (cs *conn) gdExec(out []byte, r *parse.GodistlockRequest) (_ []byte, stop bool) {
	srv := cs.srv
	if srv.draining.Load() {
		return parse.AppendGodistlockErr(out, r.Nonce, parse.ErrGodistlockDraining), true
	}
	switch r.Op {
	case parse.GodistlockHello:
		return parse.AppendGodistlockHello(out, r.Nonce, srv.cfg.GodistlockID, srv.cfg.Version), false
	case parse.GodistlockOn, parse.GodistlockTry:
		wait := r.Op == parse.GodistlockOn
		var tag uint32
		if wait {
			if len(cs.gd.parked) >= maxGodistlockPending {
				return parse.AppendGodistlockErr(out, r.Nonce, parse.ErrGodistlockPending), true
			}
			tag = cs.gd.newTag()
		}
		res := srv.eng.AcquireTagged(cs.sess, r.Lock, r.LeaseMs, wait, tag)
		if res.Blocked {
			cs.gd.parked[tag] = bytes.Clone(r.Nonce)
			return out, false
		}
		switch res.Status {
		case parse.StatusOK:
			return parse.AppendGodistlockGive(out, r.Nonce, res.Token.Fence), false
		case parse.StatusError:
			return parse.AppendGodistlockErr(out, r.Nonce, parse.ErrGodistlockInternal), true
		}
		// Taken (TRY), or --max-locks / --max-waiters reached.
		return parse.AppendGodistlockNo(out, r.Nonce), false
	case parse.GodistlockRefresh:
		if srv.eng.RenewFence(cs.sess, r.Lock, r.Fence, r.LeaseMs) {
			return parse.AppendGodistlockGive(out, r.Nonce, r.Fence), false
		}
		return parse.AppendGodistlockNo(out, r.Nonce), false
	case parse.GodistlockOff:
		_, tag := srv.eng.ReleaseOwn(cs.sess, r.Lock)
		if nonce, ok := cs.gd.parked[tag]; ok && tag != 0 {
			// A withdrawn wait, or a grant released before its GIVE was
			// written: that ON ends with NO and its delivery is dropped.
			delete(cs.gd.parked, tag)
			return parse.AppendGodistlockNo(out, nonce), false
		}
		return out, false
	case parse.GodistlockIs:
		if fence, ok := srv.eng.HolderFence(r.Lock); ok {
			return parse.AppendGodistlockLock(out, r.Nonce, fence), false
		}
		return parse.AppendGodistlockNo(out, r.Nonce), false
	case parse.GodistlockStats:
		held, waiting := srv.eng.LockCounts()
		out = parse.AppendGodistlockStat(out, r.Nonce, "connections", int64(srv.Connections()))
		out = parse.AppendGodistlockStat(out, r.Nonce, "locks", int64(held))
		out = parse.AppendGodistlockStat(out, r.Nonce, "waiters", int64(waiting))
		out = parse.AppendGodistlockStat(out, r.Nonce, "keys", int64(srv.eng.Keys()))
		return parse.AppendGodistlockStatsEnd(out, r.Nonce), false
	}
	panic("loop: no handler for godistlock op " + r.Op.String())
}

// gdDeliver writes the late reply of a parked ON: GIVE, or ERR and a close
// when the server drains (or the fence source failed).
func (cs *conn) gdDeliver(r engine.Result) {
	if cs.closed {
		return
	}
	nonce, ok := cs.gd.parked[r.Tag]
	if !ok {
		return // settled by OFF meanwhile
	}
	delete(cs.gd.parked, r.Tag)
	if r.Status == parse.StatusOK {
		out := parse.AppendGodistlockGive(cs.lp.out[:0], nonce, r.Token.Fence)
		cs.write(out)
		cs.lp.out = out[:0]
		return
	}
	reason := parse.ErrGodistlockInternal
	if cs.srv.draining.Load() {
		reason = parse.ErrGodistlockDraining
	}
	cs.write(parse.AppendGodistlockErr(cs.lp.out[:0], nonce, reason))
	_ = cs.c.Close()
}

// timeoutReply appends the line a connection gets when its read deadline
// passes, in its own protocol.
func (cs *conn) timeoutReply(dst []byte) []byte {
	if cs.gd != nil {
		return parse.AppendGodistlockErr(dst, nil, parse.ErrGodistlockDeadline)
	}
	return parse.AppendStatus(dst, parse.StatusError)
}
