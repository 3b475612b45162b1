package client

import "strings"

// Signal is one message received on a subscribed channel.
type Signal struct {
	Channel string // the channel it was sent on (not the pattern that matched)
	Payload string
}

// SignalConn is a connection used for pub/sub signals: it subscribes with
// Listen and delivers the signals it receives on Signals. Channel names
// are dot-separated tokens; a pattern may use * for one token and > for
// one or more trailing ones.
type SignalConn struct {
	pushConn[Signal]
}

// NewSignalConn starts delivering c's signal pushes on Signals. c remains
// usable for other requests; its context applies to Listen, Unlisten and
// Emit.
func NewSignalConn(c *Conn) *SignalConn {
	return &SignalConn{newPushConn(c, pushSignal, func(ch, payload string) Signal {
		return Signal{Channel: ch, Payload: payload}
	})}
}

// Listen subscribes to pattern; with WithGroup the subscription joins a
// queue group. Listening twice the same way is harmless.
func (sc *SignalConn) Listen(pattern string, opts ...ListenOption) error {
	return subscribe(sc.conn, "listen", pattern, opts)
}

// Unlisten removes a subscription made with the same pattern and group.
func (sc *SignalConn) Unlisten(pattern string, opts ...ListenOption) error {
	return subscribe(sc.conn, "unlisten", pattern, opts)
}

// Emit sends a signal on this connection; see the function Emit.
func (sc *SignalConn) Emit(channel, payload string) (int, error) {
	return Emit(sc.conn, channel, payload)
}

// Signals returns the channel of received signals. It is closed when the
// connection ends.
func (sc *SignalConn) Signals() <-chan Signal { return sc.sink.ch }

func subscribe(c *Conn, cmd, pattern string, opts []ListenOption) error {
	if err := validateKey(pattern); err != nil {
		return err
	}
	var lo listenOptions
	for _, o := range opts {
		o(&lo)
	}
	if err := validateValue("group", lo.group, false); err != nil {
		return err
	}
	return expectOK(c, cmd, pattern, lo.group)
}

// Emit sends payload on the literal channel (no * or >) and returns how
// many subscribers received it, a queue group counting once.
func Emit(c *Conn, channel, payload string) (int, error) {
	if err := validateKey(channel); err != nil {
		return 0, err
	}
	if strings.ContainsAny(channel, "*>") {
		return 0, errInvalidf("channel %q contains a wildcard", channel)
	}
	if err := validateValue("payload", payload, true); err != nil {
		return 0, err
	}
	return numberReply(c, "signal", channel, payload)
}
