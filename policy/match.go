package policy

import (
	"bytes"
	"slices"
)

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
// covers the key and names the class allows or denies it. It is a radix
// tree of the patterns' literals, in three flat arrays (nodes, edges, label
// bytes), so that a lookup walks the key once, remembering the last
// decision on its way, touches a few cache lines, and allocates nothing:
// its cost is the key's length however many rules there are.
//
// Each node stands for the literal spelled by the edge bytes and labels
// from the root to it; a node exists where a rule's literal ends or where
// literals part. At a node, a prefix rule decides for the keys that start
// with its literal (the literal itself included) and an exact rule for the
// literal alone; an exact rule is the longer match, so it wins over a
// prefix rule of the same literal.
type matcher struct {
	nodes  []trieNode
	edges  []trieEdge // each node's, sorted by byte, contiguous
	labels []byte     // each node's label, contiguous
}

type trieNode struct {
	label      uint32 // the bytes after the edge into the node: labels[label:label+labelLen]
	labelLen   uint16
	edgeCount  uint16
	firstEdge  uint32
	prefixSet  Classes // classes the node's prefix rules name
	prefixAll  Classes // of those, the ones they allow
	exactSet   Classes
	exactAllow Classes
	// belowDeny: classes that a rule strictly below the node, or an exact
	// rule at it, denies. A pattern subscription whose literal part ends
	// at the node is allowed only if nothing under it is denied.
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

// buildNode is the byte trie newMatcher builds before flattening it.
type buildNode struct {
	children                                   map[byte]*buildNode
	prefixSet, prefixAll, exactSet, exactAllow Classes
}

func (b *buildNode) rules() bool { return b.prefixSet|b.exactSet != 0 }

func newMatcher(rules []rule) matcher {
	root := &buildNode{}
	for _, r := range rules {
		n := root
		for i := 0; i < len(r.pat.Lit); i++ {
			c := n.children[r.pat.Lit[i]]
			if c == nil {
				if n.children == nil {
					n.children = make(map[byte]*buildNode)
				}
				c = &buildNode{}
				n.children[r.pat.Lit[i]] = c
			}
			n = c
		}
		if r.pat.Prefix {
			n.prefixSet |= r.classes
			if r.allow {
				n.prefixAll |= r.classes
			}
		} else {
			n.exactSet |= r.classes
			if r.allow {
				n.exactAllow |= r.classes
			}
		}
	}
	var m matcher
	m.flatten(root, nil)
	return m
}

// flatten appends the node that stands for b (its label already read
// into label) and its subtree, and returns its index and the classes its
// subtree denies (for its parent's belowDeny).
func (m *matcher) flatten(b *buildNode, label []byte) (uint32, Classes) {
	idx := uint32(len(m.nodes))
	m.nodes = append(m.nodes, trieNode{
		label: uint32(len(m.labels)), labelLen: uint16(len(label)),
		prefixSet: b.prefixSet, prefixAll: b.prefixAll, exactSet: b.exactSet, exactAllow: b.exactAllow,
	})
	m.labels = append(m.labels, label...)
	keys := make([]byte, 0, len(b.children))
	for k := range b.children {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// The node's edges are contiguous: reserve them, then fill them in as
	// the children are flattened after.
	first := uint32(len(m.edges))
	m.edges = append(m.edges, make([]trieEdge, len(keys))...)
	var below Classes
	for i, k := range keys {
		c := b.children[k]
		// Follow a chain of nodes with one child and no rule: one label.
		var lab []byte
		for len(c.children) == 1 && !c.rules() {
			for kk, cc := range c.children {
				lab = append(lab, kk)
				c = cc
			}
		}
		ci, d := m.flatten(c, lab)
		m.edges[first+uint32(i)] = trieEdge{b: k, next: ci}
		below |= d
	}
	nd := &m.nodes[idx]
	nd.firstEdge, nd.edgeCount = first, uint16(len(keys))
	nd.belowDeny = below | nd.exactSet&^nd.exactAllow
	return idx, below | nd.exactSet&^nd.exactAllow | nd.prefixSet&^nd.prefixAll
}

// child is the node the edge of byte b out of n leads to.
func (m *matcher) child(n *trieNode, b byte) (uint32, bool) {
	for _, e := range m.edges[n.firstEdge : n.firstEdge+uint32(n.edgeCount)] {
		if e.b == b {
			return e.next, true
		}
		if e.b > b {
			break
		}
	}
	return 0, false
}

// allows reports whether key may be used for c.
func (m *matcher) allows(c Class, key []byte) bool {
	bit := Classes(1) << c
	allowed := false
	nd := &m.nodes[0]
	for i := 0; ; {
		if l := int(nd.labelLen); l > 0 {
			if len(key)-i < l || string(key[i:i+l]) != string(m.labels[nd.label:nd.label+uint32(l)]) {
				return allowed // the key ends in the label, or leaves it
			}
			i += l
		}
		if nd.prefixSet&bit != 0 {
			allowed = nd.prefixAll&bit != 0
		}
		if i == len(key) {
			if nd.exactSet&bit != 0 {
				allowed = nd.exactAllow&bit != 0
			}
			return allowed
		}
		next, ok := m.child(nd, key[i])
		if !ok {
			return allowed
		}
		i++
		nd = &m.nodes[next]
	}
}

// allowsAllUnder reports whether every key that starts with lit may be
// used for c (lit itself included: a '*' token may match an empty one,
// "a.*" matching "a."): the decision at lit by prefix rules is allow, and
// no rule under lit, or exact rule at it, denies c.
func (m *matcher) allowsAllUnder(c Class, lit []byte) bool {
	bit := Classes(1) << c
	allowed := false
	nd := &m.nodes[0]
	for i := 0; ; {
		if l := int(nd.labelLen); l > 0 {
			label := m.labels[nd.label : nd.label+uint32(l)]
			rest := lit[i:]
			if len(rest) < l {
				if string(label[:len(rest)]) == string(rest) {
					// lit ends inside the label: the node and all under
					// it are under lit.
					return allowed && (nd.belowDeny|nd.prefixSet&^nd.prefixAll)&bit == 0
				}
				return allowed // lit leaves the tree: no rule under it
			}
			if string(rest[:l]) != string(label) {
				return allowed
			}
			i += l
		}
		if nd.prefixSet&bit != 0 {
			allowed = nd.prefixAll&bit != 0
		}
		if i == len(lit) {
			return allowed && nd.belowDeny&bit == 0
		}
		next, ok := m.child(nd, lit[i])
		if !ok {
			return allowed // no rule at all under lit
		}
		i++
		nd = &m.nodes[next]
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
