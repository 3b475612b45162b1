package policy

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
)

// Policy is a parsed policy file: its identities, in the file's order.
// It is immutable and safe for concurrent use.
type Policy struct {
	// Version names the file's content (the first 16 hex digits of its
	// SHA-256): two servers that show the same Version enforce the same
	// policy.
	Version    string
	identities []*Identity
	byName     map[string]*Identity
	byCert     map[string]*Identity
}

// Identity is who a connection is, and what it may do. It belongs to one
// Policy: after a reload, look its name up in the new one.
type Identity struct {
	Name string
	// Index is the identity's position in its policy, from 0: a bound
	// for tables of per-identity figures.
	Index  int
	tokens [][sha256.Size]byte
	certs  []string
	rules  []rule
	m      matcher
	// everything: the --auth-token identity, allowed all on every key.
	everything bool
	Quota      Quota
}

// Quota bounds what one identity holds at once, summed over its
// connections; 0 means no bound.
type Quota struct {
	Locks   int64 // held locks and semaphore slots
	Waiters int64 // queued waiters
	Keys    int64 // counters, KV entries and lists made
	Conns   int64 // open connections
	Rate    int64 // requests per second; past it the connections are paced
}

// Everyone is the identity of every connection when no policy is set,
// and of --auth-token's holder: every permission on every key.
func Everyone(name string) *Identity {
	return &Identity{Name: name, Index: -1, everything: true}
}

// Nobody is what a connection's identity becomes when a reload removed
// it: nothing is allowed.
var Nobody = &Identity{Name: "(removed)", Index: -1}

// Allows reports whether the identity may run a command of class c on
// key (a literal key). It does not allocate.
func (id *Identity) Allows(c Class, key []byte) bool {
	if id.everything {
		return true
	}
	if len(id.m.a) == 0 {
		return false
	}
	return id.m.allows(c, key)
}

// A Resume remembers where an identity's last check left its walk down
// the rules' tree: at the last branch before the key's end. A client's
// next key often begins the same way (the release of the key it just
// locked, the next key under its prefix), and its check then starts
// there instead of at the root, skipping the nodes above: on a server
// with many tenants those are the ones the cache has lost since this
// client's last request. The zero Resume remembers nothing. A Resume
// belongs to one goroutine (a session's); it does not allocate.
type Resume struct {
	id  *Identity // whose walk it remembers; nil: none
	st  walkState
	n   uint8 // the beginning's length, ≤ len(buf)
	buf [resumeBytes]byte
	// settled: for class class, every key that begins with buf[:n] and
	// goes on past it gets answer ok (no rule under st's node names
	// class), so the next such check is a compare, not a walk: a
	// connection's keys under one prefix (a lock and its release) are
	// decided so.
	settled bool
	class   Class
	ok      bool
}

// resumeBytes bounds the beginning a Resume remembers: a longer one is
// not remembered, and its next check starts at the root.
const resumeBytes = 48

// AllowsResume is Allows, starting where r says when key begins as the
// key of r's last walk did there, and leaving in r where this walk
// branched last.
func (id *Identity) AllowsResume(c Class, key []byte, r *Resume) bool {
	if id.everything {
		return true
	}
	if len(id.m.a) == 0 {
		return false
	}
	var from walkState
	if r.id == id && int(r.n) <= len(key) && string(key[:r.n]) == string(r.buf[:r.n]) {
		if r.settled && r.class == c && int(r.n) < len(key) {
			return r.ok
		}
		from = r.st
	}
	var last walkState
	ok, found, settled := id.m.walk(c, key, from, &last)
	switch {
	case !found || last.i > resumeBytes:
		r.id = nil
	case r.id != id || last != r.st:
		r.id, r.st, r.n = id, last, uint8(last.i)
		copy(r.buf[:], key[:last.i])
		fallthrough
	default:
		r.settled, r.class, r.ok = settled, c, ok
	}
	return ok
}

// AllowsPattern reports whether the identity may subscribe to a
// NATS-style pattern for class c: every key it can match must be
// allowed. A pattern without a wildcard is one key.
func (id *Identity) AllowsPattern(c Class, pattern []byte) bool {
	if id.everything {
		return true
	}
	if len(id.m.a) == 0 {
		return false
	}
	lit, wild := literalPart(pattern)
	if !wild {
		return id.m.allows(c, pattern)
	}
	return id.m.allowsAllUnder(c, lit)
}

// AllowsSome reports whether the identity may use class c on at least one
// key: what a keyless command (stats) needs before its answer is scoped.
func (id *Identity) AllowsSome(c Class) bool {
	if id.everything {
		return true
	}
	for _, r := range id.rules {
		if r.allow && r.classes.Has(c) {
			return true
		}
	}
	return false
}

// Everything reports whether the identity may do everything (no policy, or
// --auth-token): callers skip scoping for it.
func (id *Identity) Everything() bool { return id.everything }

// Identities returns the policy's identities in file order. The slice is
// the policy's: do not modify it.
func (p *Policy) Identities() []*Identity { return p.identities }

// Identity returns the identity named name, or nil.
func (p *Policy) Identity(name string) *Identity { return p.byName[name] }

// ByToken returns the identity whose token is token, or nil. Every
// identity's every token is compared, in constant time, so the time taken
// tells nothing of which one matched or how close a guess came.
func (p *Policy) ByToken(token []byte) *Identity {
	sum := sha256.Sum256(token)
	var found *Identity
	for _, id := range p.identities {
		for i := range id.tokens {
			if subtle.ConstantTimeCompare(sum[:], id.tokens[i][:]) == 1 {
				found = id
			}
		}
	}
	return found
}

// ByCertificate returns the identity a client certificate names, or nil:
// the first of its subject's common name, then its DNS, e-mail and URI
// subject alternative names, that a `cert` line of the policy lists.
func (p *Policy) ByCertificate(c *x509.Certificate) *Identity {
	if c == nil {
		return nil
	}
	if id := p.byCert[c.Subject.CommonName]; id != nil && c.Subject.CommonName != "" {
		return id
	}
	for _, n := range c.DNSNames {
		if id := p.byCert[n]; id != nil {
			return id
		}
	}
	for _, n := range c.EmailAddresses {
		if id := p.byCert[n]; id != nil {
			return id
		}
	}
	for _, u := range c.URIs {
		if id := p.byCert[u.String()]; id != nil {
			return id
		}
	}
	return nil
}

// Explain says which rule decides c on key for the identity: its line in
// the file and its text, or why none does. For `acl check` and the refusal
// log; it allocates.
func (id *Identity) Explain(c Class, key []byte, pattern bool) (allowed bool, why string) {
	if id.everything {
		return true, "identity " + id.Name + " may do everything"
	}
	if pattern {
		allowed = id.AllowsPattern(c, key)
	} else {
		allowed = id.Allows(c, key)
	}
	// The deciding rule: the longest covering pattern naming c (ties: an
	// exact one). For a pattern subscription, also a deny under it.
	var best *rule
	lit := key
	if pattern {
		lit, _ = literalPart(key)
	}
	for i := range id.rules {
		r := &id.rules[i]
		if !r.classes.Has(c) || !r.pat.covers(lit) {
			continue
		}
		if best == nil || len(r.pat.Lit) > len(best.pat.Lit) || len(r.pat.Lit) == len(best.pat.Lit) && !r.pat.Prefix {
			best = r
		}
	}
	if pattern && !allowed && best != nil && best.allow {
		for i := range id.rules {
			r := &id.rules[i]
			if r.classes.Has(c) && !r.allow && len(r.pat.Lit) > len(lit) && string(r.pat.Lit[:len(lit)]) == string(lit) {
				return false, r.describe() + " denies part of what the pattern matches"
			}
		}
	}
	if best == nil {
		return allowed, "no rule of identity " + id.Name + " names " + c.String() + " for this key (deny by default)"
	}
	return allowed, best.describe()
}

// covers reports whether the pattern covers key.
func (p Pattern) covers(key []byte) bool {
	if p.Prefix {
		return len(key) >= len(p.Lit) && string(key[:len(p.Lit)]) == p.Lit
	}
	return string(key) == p.Lit
}
