package fanout

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Config describes one repetition. The zero value of every optional field
// means its default, filled in by Run.
type Config struct {
	Name string // label used in errors; default Addr
	Addr string // host:port, loopback only

	Subscribers int    // receivers of every clean-phase signal; default 1000
	Signals     int    // signals of the clean and of the after phase; default 500
	Warmup      int    // unmeasured signals before the clean phase; default 20
	Payload     int    // payload bytes of every signal; default 200
	Channel     string // default "bench.fanout"

	// MaxSlowSignals bounds the slow phase: a slow subscriber still
	// attached after this many signals fails the run. Default 20000.
	MaxSlowSignals int
	// MaxSlowBytes bounds the calibration: a never-reading subscriber
	// that absorbs this much without being dropped means the server has no
	// slow-consumer bound, and fails the run. Default 256 MiB.
	MaxSlowBytes int64
	// SlowRcvBuf is the slow subscriber's SO_RCVBUF: small, so that what
	// it absorbs is mostly the server's own buffering. Default 4096.
	SlowRcvBuf int
	// Timeout bounds every signal (written, answered and received by all)
	// and every setup step. Default 10 s.
	Timeout time.Duration
	// PID is the server process, for CPU per delivered push (0: not
	// measured).
	PID int
}

// Limits.
const (
	// maxPayload keeps the payload line under dflockd's 256-byte line cap.
	maxPayload = 220
	// minPayload leaves room for the sequence number, phase and timestamp
	// the payload starts with.
	minPayload = 48
	// maxSubscribers bounds the connections of one run.
	maxSubscribers = 1 << 16
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("fanout: bad config")

func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = c.Addr
	}
	if c.Subscribers == 0 {
		c.Subscribers = 1000
	}
	if c.Signals == 0 {
		c.Signals = 500
	}
	if c.Warmup == 0 {
		c.Warmup = 20
	}
	if c.Payload == 0 {
		c.Payload = 200
	}
	if c.Channel == "" {
		c.Channel = "bench.fanout"
	}
	if c.MaxSlowSignals == 0 {
		c.MaxSlowSignals = 20000
	}
	if c.MaxSlowBytes == 0 {
		c.MaxSlowBytes = 256 << 20
	}
	if c.SlowRcvBuf == 0 {
		c.SlowRcvBuf = 4096
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Second
	}
	return c
}

func (c Config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrConfig, c.Name, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Addr == "":
		return bad("no address")
	case c.Subscribers < 2 || c.Subscribers > maxSubscribers:
		// One subscriber leaves for the slow phase; at least one must stay.
		return bad("subscribers %d out of [2, %d]", c.Subscribers, maxSubscribers)
	case c.Signals < 1 || c.Warmup < 0 || c.MaxSlowSignals < 1 || c.MaxSlowBytes < 1:
		return bad("signals %d, warm-up %d, max slow signals %d and bytes %d must be positive", c.Signals, c.Warmup, c.MaxSlowSignals, c.MaxSlowBytes)
	case c.Payload < minPayload || c.Payload > maxPayload:
		return bad("payload %d out of [%d, %d]", c.Payload, minPayload, maxPayload)
	case c.Channel == "" || len(c.Channel) > 100 || strings.ContainsAny(c.Channel, " \t\r\n*>"):
		return bad("channel %q must be a literal of at most 100 bytes without blanks", c.Channel)
	case c.SlowRcvBuf < 1 || c.Timeout <= 0:
		return bad("slow receive buffer %d and timeout %v must be positive", c.SlowRcvBuf, c.Timeout)
	}
	return nil
}

// fillChannel is the channel only the slow subscriber listens on: it fills
// that subscriber's backlog without touching the others.
func (c Config) fillChannel() string { return c.Channel + ".fill" }
