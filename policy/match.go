package policy

import "bytes"

// A Pattern in a policy file names the keys a rule covers:
//
//   - every key
//     team-a/*     every key that starts with "team-a/" (the key "team-a/" too)
//     team-a/job   that key only
//
// A '*' anywhere but at the end is a plain byte of a key.
type Pattern struct {
	Text   string // as written, for messages
	Prefix bool   // the rule covers every key that starts with Lit
	Lit    string
}

// ParsePattern reads a pattern as written in a policy file.
func ParsePattern(s string) Pattern {
	if lit, ok := cutSuffix(s, "*"); ok {
		return Pattern{Text: s, Prefix: true, Lit: lit}
	}
	return Pattern{Text: s, Lit: s}
}

func cutSuffix(s, suffix string) (string, bool) {
	if len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix {
		return s[:len(s)-len(suffix)], true
	}
	return s, false
}

// matcher decides, for a class and a key, whether the longest pattern that
// covers the key and names the class allows or denies it. It is a byte
// trie of the patterns' literals: a lookup walks the key once, remembering
// the last decision on its way, so its cost is the key's length however
// many rules there are, and it allocates nothing.
//
// At the node of a literal, a prefix rule decides for the keys that start
// with it (the literal itself included) and an exact rule for the literal
// alone; an exact rule is the longer match, so it wins over a prefix rule
// of the same literal.
type matcher struct {
	nodes []trieNode
}

type trieNode struct {
	edges []trieEdge
	// Prefix and exact rules ending here: which classes they name (set)
	// and which of those they allow.
	prefixSet, prefixAllow Classes
	exactSet, exactAllow   Classes
	// belowDeny: classes that some rule strictly below this node, or an
	// exact rule here, denies. A pattern subscription whose literal part
	// ends here is allowed only if nothing under it is denied.
	belowDeny Classes
}

type trieEdge struct {
	b    byte
	next uint32
}

// rule is a parsed allow or deny line.
type rule struct {
	pat     Pattern
	classes Classes
	allow   bool
	line    int
}

func newMatcher(rules []rule) matcher {
	m := matcher{nodes: make([]trieNode, 1, 1+len(rules)*8)}
	for _, r := range rules {
		n := m.insert(r.pat.Lit)
		nd := &m.nodes[n]
		if r.pat.Prefix {
			nd.prefixSet |= r.classes
			if r.allow {
				nd.prefixAllow |= r.classes
			}
		} else {
			nd.exactSet |= r.classes
			if r.allow {
				nd.exactAllow |= r.classes
			}
		}
	}
	m.fillBelowDeny(0)
	return m
}

// insert returns the node of lit, adding the nodes on its way.
func (m *matcher) insert(lit string) uint32 {
	n := uint32(0)
	for i := 0; i < len(lit); i++ {
		next, ok := m.child(n, lit[i])
		if !ok {
			next = uint32(len(m.nodes))
			m.nodes = append(m.nodes, trieNode{})
			m.nodes[n].edges = append(m.nodes[n].edges, trieEdge{b: lit[i], next: next})
		}
		n = next
	}
	return n
}

func (m *matcher) child(n uint32, b byte) (uint32, bool) {
	for _, e := range m.nodes[n].edges {
		if e.b == b {
			return e.next, true
		}
	}
	return 0, false
}

// fillBelowDeny computes belowDeny for n's subtree and returns what n
// contributes to its parent's: its own denies and those below it.
func (m *matcher) fillBelowDeny(n uint32) Classes {
	var below Classes
	for _, e := range m.nodes[n].edges {
		below |= m.fillBelowDeny(e.next)
	}
	nd := &m.nodes[n]
	nd.belowDeny = below | nd.exactSet&^nd.exactAllow
	return below | nd.exactSet&^nd.exactAllow | nd.prefixSet&^nd.prefixAllow
}

// allows reports whether key may be used for c.
func (m *matcher) allows(c Class, key []byte) bool {
	bit := Classes(1) << c
	allowed := false
	n := uint32(0)
	for i := 0; ; i++ {
		nd := &m.nodes[n]
		if nd.prefixSet&bit != 0 {
			allowed = nd.prefixAllow&bit != 0
		}
		if i == len(key) {
			if nd.exactSet&bit != 0 {
				allowed = nd.exactAllow&bit != 0
			}
			return allowed
		}
		next, ok := m.child(n, key[i])
		if !ok {
			return allowed
		}
		n = next
	}
}

// allowsAllUnder reports whether every key that starts with lit may be
// used for c (lit itself included: a '*' token may match an empty one,
// "a.*" matching "a."): the decision at lit by prefix rules is allow, and
// no rule under lit, or exact rule at it, denies c.
func (m *matcher) allowsAllUnder(c Class, lit []byte) bool {
	bit := Classes(1) << c
	allowed := false
	n := uint32(0)
	for i := 0; ; i++ {
		nd := &m.nodes[n]
		if nd.prefixSet&bit != 0 {
			allowed = nd.prefixAllow&bit != 0
		}
		if i == len(lit) {
			return allowed && nd.belowDeny&bit == 0
		}
		next, ok := m.child(n, lit[i])
		if !ok {
			return allowed // no rule at all under lit
		}
		n = next
	}
}

// literalPart is the part of a NATS-style pattern before its first
// wildcard token ('*' for one token, '>' for the rest), and whether it
// has one: "a.b.>" → "a.b.", true; "a.b" → "a.b", false.
func literalPart(p []byte) ([]byte, bool) {
	start := 0
	for {
		end := bytes.IndexByte(p[start:], '.')
		tok := p[start:]
		if end >= 0 {
			tok = p[start : start+end]
		}
		if len(tok) == 1 && (tok[0] == '*' || tok[0] == '>') {
			return p[:start], true
		}
		if end < 0 {
			return p, false
		}
		start += end + 1
	}
}
