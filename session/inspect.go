package session

import (
	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// Who a session is, for the lock observatory (httpapi): the engine knows
// a holder or waiter by its SessionID and connection number; the hub knows
// the transport behind it. Identify reads only what Open and OpenEndpoint
// set before publishing a session in the routes (its transport and
// codec), so it is safe from any goroutine.

// Transport kinds an Identity names.
const (
	TransportTCP        = "tcp"
	TransportTLS        = "tls"
	TransportHTTP       = "http"       // an HTTP API session (an Endpoint)
	TransportGodistlock = "godistlock" // the godistlock protocol, over TCP or TLS
)

// Identity is what the hub knows of an engine session's client.
type Identity struct {
	Transport  string // one of the Transport kinds
	RemoteAddr string // host:port, or the address alone for HTTP sessions
	Secure     bool   // over TLS (HTTPS for an HTTP session is not known here)
	// Name is the policy identity the client authenticated as ("" without
	// a policy, or before its auth).
	Name string
}

// NamedEndpoint is implemented by endpoints that know their policy
// identity (httpapi's sessions).
type NamedEndpoint interface {
	IdentityName() string
}

// SecureTransport is implemented by transports that can tell whether
// their connection is TLS (netconn's); the others are plain TCP.
type SecureTransport interface {
	Secure() bool
}

// AddressedEndpoint is implemented by endpoints that know their client's
// address (httpapi's sessions).
type AddressedEndpoint interface {
	RemoteAddr() string
}

// Identify returns the identity of the engine session id whose owner
// connection number is connID, if it is one of this hub's: on a single
// node every open session is; on a cluster member, the sessions of the
// connections it serves as leader (the replicated state numbers them
// epoch<<32 | the hub's connection number, and the epoch's connections
// are all the leader's).
func (h *Hub) Identify(id engine.SessionID, connID uint64) (Identity, bool) {
	id, ok := h.app.local(id, connID)
	if !ok {
		return Identity{}, false
	}
	if s := h.lookup(id); s != nil {
		return s.identity(), true
	}
	if e := h.endpoint(id); e != nil {
		ident := Identity{Transport: TransportHTTP}
		if a, ok := e.(AddressedEndpoint); ok {
			ident.RemoteAddr = a.RemoteAddr()
		}
		if n, ok := e.(NamedEndpoint); ok {
			ident.Name = n.IdentityName()
		}
		return ident, true
	}
	return Identity{}, false
}

func (s *Session) identity() Identity {
	ident := Identity{Transport: TransportTCP}
	if st, ok := s.t.(SecureTransport); ok && st.Secure() {
		ident.Transport, ident.Secure = TransportTLS, true
	}
	if _, ok := s.codec.(*godistlock); ok {
		ident.Transport = TransportGodistlock
	}
	if a := s.peerAddr; a != nil {
		ident.RemoteAddr = a.String()
	}
	if id := s.who.Load(); id != nil {
		ident.Name = id.Name
	}
	return ident
}

// StateNow is the time of the hub's engine state: the hub's clock, or on
// a cluster member the replica's (the log's) time, which the deadlines in
// the replicated state are measured against.
func (h *Hub) StateNow() timerwheel.Instant { return h.app.stateNow(h.clock.Now()) }

// Profile is the hub's --compat profile.
func (h *Hub) Profile() vocab.Profile { return h.cfg.Profile }
