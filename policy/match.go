package policy

import (
	"bytes"
	"encoding/binary"
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
// tree of the patterns' literals in one byte arena, each node a record
// with its label and its edges beside it, so that a lookup walks the key
// once, remembering the last decision on its way, touches about one cache
// line a node, and allocates nothing: its cost is the key's length however
// many rules there are. On a server with many tenants the tries are seldom
// in the cache between two requests of one tenant: the cache lines a walk
// misses, not its instructions, are what a check costs there, hence one
// record per node rather than arrays of nodes, edges and labels apart.
//
// Each node stands for the literal spelled by the edge bytes and labels
// from the root to it; a node exists where a rule's literal ends or where
// literals part. At a node, a prefix rule decides for the keys that start
// with its literal (the literal itself included) and an exact rule for the
// literal alone; an exact rule is the longer match, so it wins over a
// prefix rule of the same literal.
type matcher struct {
	// a holds the node records, the root's at 0, each at an offset that
	// is a multiple of 4:
	//
	//	0  prefixSet   classes the node's prefix rules name
	//	1  prefixAll   of those, the ones they allow
	//	2  exactSet
	//	3  exactAllow
	//	4  belowDeny   classes that a rule strictly below the node, or an
	//	               exact rule at it, denies (a pattern subscription
	//	               whose literal part ends at the node is allowed only
	//	               if nothing under it is denied)
	//	5  belowSet    classes that a rule strictly below the node, or an
	//	               exact rule at it, names: for another class the
	//	               decision of a longer key is made by the time a walk
	//	               reaches the node, and the walk stops there
	//	6  uint16      edge count E
	//	8  uint16      label length L: the bytes after the edge into the node
	//	12 L bytes     the label
	//	   E bytes     the edges' bytes, sorted
	//	   (to a multiple of 4)
	//	   E × uint32  the edges' child offsets, in the same order
	a []byte
}

const nodeHeader = 12

// node is a record of the arena, read.
type node struct {
	sets             [5]Classes // prefixSet, prefixAll, exactSet, exactAllow, belowDeny
	label, edgeBytes []byte
	ptrs             uint32 // offset of the child offsets
}

// at reads the node record at offset o.
func (m *matcher) at(o uint32) node {
	h := m.a[o : o+nodeHeader]
	e, l := uint32(binary.LittleEndian.Uint16(h[6:])), uint32(binary.LittleEndian.Uint16(h[8:]))
	p := o + nodeHeader
	return node{
		sets:  [5]Classes{Classes(h[0]), Classes(h[1]), Classes(h[2]), Classes(h[3]), Classes(h[4])},
		label: m.a[p : p+l], edgeBytes: m.a[p+l : p+l+e], ptrs: align4(p + l + e),
	}
}

// child is the offset of the node the edge of byte b out of n leads to.
func (m *matcher) child(n *node, b byte) (uint32, bool) {
	j := bytes.IndexByte(n.edgeBytes, b)
	if j < 0 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(m.a[n.ptrs+4*uint32(j):]), true
}

func align4(o uint32) uint32 { return (o + 3) &^ 3 }

// rule is a parsed allow or deny line.
type rule struct {
	pat     Pattern
	classes Classes
	allow   bool
	line    int
}

// buildNode is the byte trie newMatcher builds before flattening it. Its
// children are a slice searched in turn, not a map: a node has few, and
// a map for each of a large policy's nodes made most of a parse's
// garbage (the heap's peak, whose bookkeeping stays resident after).
type buildNode struct {
	children                                   []buildEdge
	prefixSet, prefixAll, exactSet, exactAllow Classes
}

// buildEdge is a buildNode's child by its byte.
type buildEdge struct {
	b byte
	n *buildNode
}

// child returns b's child by byte c, nil if none.
func (b *buildNode) child(c byte) *buildNode {
	for _, e := range b.children {
		if e.b == c {
			return e.n
		}
	}
	return nil
}

func (b *buildNode) rules() bool { return b.prefixSet|b.exactSet != 0 }

func newMatcher(rules []rule) matcher {
	root := &buildNode{}
	for _, r := range rules {
		n := root
		for i := 0; i < len(r.pat.Lit); i++ {
			c := n.child(r.pat.Lit[i])
			if c == nil {
				c = &buildNode{}
				n.children = append(n.children, buildEdge{r.pat.Lit[i], c})
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
	_, _, _ = m.flatten(root, nil)
	return m
}

// flatten appends the record of the node that stands for b (its label
// already read into label) and then its subtree's, and returns the
// record's offset and the classes its subtree denies and names (for its
// parent's belowDeny and belowSet).
func (m *matcher) flatten(b *buildNode, label []byte) (uint32, Classes, Classes) {
	slices.SortFunc(b.children, func(x, y buildEdge) int { return int(x.b) - int(y.b) })
	keys := make([]byte, 0, len(b.children))
	for _, e := range b.children {
		keys = append(keys, e.b)
	}
	o := uint32(len(m.a))
	p := o + nodeHeader + uint32(len(label)) + uint32(len(keys))
	ptrs := align4(p)
	m.a = append(m.a, make([]byte, ptrs+4*uint32(len(keys))-o)...)
	h := m.a[o:]
	h[0], h[1], h[2], h[3] = byte(b.prefixSet), byte(b.prefixAll), byte(b.exactSet), byte(b.exactAllow)
	binary.LittleEndian.PutUint16(h[6:], uint16(len(keys)))
	binary.LittleEndian.PutUint16(h[8:], uint16(len(label)))
	copy(h[nodeHeader:], label)
	copy(h[nodeHeader+len(label):], keys)
	var below, named Classes
	for i, e := range b.children {
		c := e.n
		// Follow a chain of nodes with one child and no rule: one label.
		var lab []byte
		for len(c.children) == 1 && !c.rules() {
			lab = append(lab, c.children[0].b)
			c = c.children[0].n
		}
		co, d, n := m.flatten(c, lab)
		binary.LittleEndian.PutUint32(m.a[ptrs+4*uint32(i):], co) // m.a may have moved
		below |= d
		named |= n
	}
	own := b.exactSet &^ b.exactAllow
	m.a[o+4] = byte(below | own)
	m.a[o+5] = byte(named | b.exactSet)
	return o, below | own | b.prefixSet&^b.prefixAll, named | b.exactSet | b.prefixSet
}

// allows reports whether key may be used for c.
func (m *matcher) allows(c Class, key []byte) bool {
	ok, _, _ := m.walk(c, key, walkState{}, nil)
	return ok
}

// walkState is where a walk stands: at the record at off, key[:i]
// consumed (i at the end of that node's label), allow the decisions of
// the prefix rules met so far, for every class.
type walkState struct {
	off   uint32
	i     int
	allow Classes
}

// walk decides key for c from st (the root's state, the zero one, or one
// a walk of a key with the same first st.i bytes left). It also returns
// the state at the last node it reached with key left to read, the point
// from which the next key with that beginning may start (found false: the
// root's). It reads the records itself rather than through at and child:
// it is the request path's, and the calls and copies those cost would be
// most of a check. settled: the walk stopped at last's node because no
// rule further down names c, so every key that begins as key[:last.i]
// and goes on past it gets the same answer.
func (m *matcher) walk(c Class, key []byte, st walkState, last *walkState) (allowed, found, settled bool) {
	bit := Classes(1) << c
	a := m.a
	o, i, allow := int(st.off), st.i, st.allow
	for {
		h := a[o : o+nodeHeader]
		p := o + nodeHeader
		if i > st.i || o == 0 { // a node entered here, not the state's own
			if l := int(binary.LittleEndian.Uint16(h[8:])); l > 0 {
				if len(key)-i < l || string(key[i:i+l]) != string(a[p:p+l]) {
					return allow&bit != 0, found, false // the key ends in the label, or leaves it
				}
				i += l
			}
			allow = allow&^Classes(h[0]) | Classes(h[1])
		}
		p += int(binary.LittleEndian.Uint16(h[8:]))
		if i == len(key) {
			if Classes(h[2])&bit != 0 {
				return Classes(h[3])&bit != 0, found, false
			}
			return allow&bit != 0, found, false
		}
		if last != nil && o != 0 {
			*last, found = walkState{off: uint32(o), i: i, allow: allow}, true
		}
		if Classes(h[5])&bit == 0 {
			// No rule further down names c.
			return allow&bit != 0, found, found && last.off == uint32(o)
		}
		b, e := key[i], int(binary.LittleEndian.Uint16(h[6:]))
		j := 0
		for ; j < e && a[p+j] < b; j++ { // sorted: stop at the first not below
		}
		if j == e || a[p+j] != b {
			return allow&bit != 0, found, false
		}
		o = int(binary.LittleEndian.Uint32(a[(p+e+3)&^3+4*j:]))
		i++
	}
}

// allowsAllUnder reports whether every key that starts with lit may be
// used for c (lit itself included: a '*' token may match an empty one,
// "a.*" matching "a."): the decision at lit by prefix rules is allow, and
// no rule under lit, or exact rule at it, denies c.
func (m *matcher) allowsAllUnder(c Class, lit []byte) bool {
	bit := Classes(1) << c
	allowed := false
	nd := m.at(0)
	for i := 0; ; {
		if l := len(nd.label); l > 0 {
			rest := lit[i:]
			if len(rest) < l {
				if string(nd.label[:len(rest)]) == string(rest) {
					// lit ends inside the label: the node and all under
					// it are under lit.
					return allowed && (nd.sets[4]|nd.sets[0]&^nd.sets[1])&bit == 0
				}
				return allowed // lit leaves the tree: no rule under it
			}
			if string(rest[:l]) != string(nd.label) {
				return allowed
			}
			i += l
		}
		if nd.sets[0]&bit != 0 {
			allowed = nd.sets[1]&bit != 0
		}
		if i == len(lit) {
			return allowed && nd.sets[4]&bit == 0
		}
		next, ok := m.child(&nd, lit[i])
		if !ok {
			return allowed // no rule at all under lit
		}
		i++
		nd = m.at(next)
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
