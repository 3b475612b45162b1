package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The policy file. One statement a line, its fields separated by blanks;
// a field that starts with '#' starts a comment to the end of the line.
// An identity's statements follow its `identity` line:
//
//	identity team-a
//	  token sha256:<64 hex digits>     # the SHA-256 of a token; repeatable (rotation)
//	  cert  team-a.clients.example     # a client certificate's CN or SAN; repeatable
//	  allow lock,read,write  team-a/*  # classes (or *), then a pattern (match.go)
//	  deny  write            team-a/frozen/*
//	  quota locks=1000 waiters=500 keys=10000 conns=64 rate=2000
//
// For a class and a key, the longest pattern that covers the key among the
// identity's allow and deny lines naming the class decides; no such line
// denies.

// Limits of a policy file, so that a mistaken or hostile file cannot make
// the server spend unbounded memory or time loading it.
const (
	MaxFileSize   = 4 << 20 // bytes
	maxIdentities = 10000   // per-identity metrics' cardinality stays bounded
	maxNameLen    = 64
	maxPatternLen = 1024
	maxRules      = 100000 // allow and deny lines in the file
)

// ErrPolicy is wrapped by every error Parse returns.
var ErrPolicy = errors.New("policy")

// TokenHash is how a policy file stores a token: "sha256:" and the hex
// digest of the token's bytes.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Parse reads a policy file. Its errors name the line.
func Parse(data []byte) (*Policy, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%w: the file is %d bytes, over the limit of %d", ErrPolicy, len(data), MaxFileSize)
	}
	sum := sha256.Sum256(data)
	p := &Policy{
		Version: hex.EncodeToString(sum[:8]),
		byName:  make(map[string]*Identity),
		byCert:  make(map[string]*Identity),
	}
	pr := parser{p: p, nameLine: map[string]int{}, tokenLine: map[[sha256.Size]byte]string{}, certLine: map[string]string{}}
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if err := pr.line(lineNo, fields(line)); err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrPolicy, lineNo, err)
		}
	}
	for _, id := range p.identities {
		id.m = newMatcher(id.rules)
	}
	p.pack()
	return p, nil
}

// pack moves what the policy keeps (every identity's rules, their
// patterns' text and the matchers' arenas) into three allocations made
// after the parse's temporaries. Kept where the parse left them, they
// would be scattered among the lines' strings, the growing slices and the
// tries built before flattening: pages the garbage collector could not
// give back while one small object on them lived, a resident megabyte or
// two for a policy of thousands of rules.
func (p *Policy) pack() {
	var nRules, nText, nArena int
	for _, id := range p.identities {
		nRules += len(id.rules)
		nArena += len(id.m.a)
		for _, r := range id.rules {
			nText += len(r.pat.Text)
		}
	}
	var sb strings.Builder
	sb.Grow(nText)
	for _, id := range p.identities {
		for _, r := range id.rules {
			sb.WriteString(r.pat.Text)
		}
	}
	text := sb.String()
	rules := make([]rule, 0, nRules)
	arena := make([]byte, 0, nArena)
	for _, id := range p.identities {
		start := len(rules)
		for _, r := range id.rules {
			// A pattern's literal is its text, less a prefix rule's '*'.
			n := len(r.pat.Text)
			if strings.HasPrefix(r.pat.Text, r.pat.Lit) {
				r.pat.Lit = text[:len(r.pat.Lit)]
			}
			r.pat.Text = text[:n]
			text = text[n:]
			rules = append(rules, r)
		}
		id.rules = rules[start:len(rules):len(rules)]
		a := len(arena)
		arena = append(arena, id.m.a...)
		id.m.a = arena[a:len(arena):len(arena)]
	}
}

// fields splits a line at blanks, up to a comment.
func fields(line []byte) []string {
	var out []string
	for _, f := range strings.Fields(string(line)) {
		if strings.HasPrefix(f, "#") {
			break
		}
		out = append(out, f)
	}
	return out
}

type parser struct {
	p         *Policy
	cur       *Identity
	nameLine  map[string]int
	tokenLine map[[sha256.Size]byte]string // which identity holds a token hash
	certLine  map[string]string
	quotaSeen map[string]int
	rules     int
}

func (pr *parser) line(n int, f []string) error {
	if len(f) == 0 {
		return nil
	}
	if f[0] == "identity" {
		return pr.identity(n, f)
	}
	if pr.cur == nil {
		return fmt.Errorf("%q before the first identity line (the file is a list of `identity NAME` blocks)", f[0])
	}
	switch f[0] {
	case "token":
		return pr.token(f)
	case "cert":
		return pr.cert(f)
	case "allow", "deny":
		return pr.rule(n, f)
	case "quota":
		return pr.quota(n, f)
	}
	return fmt.Errorf("unknown statement %q (want identity, token, cert, allow, deny or quota)", f[0])
}

func (pr *parser) identity(n int, f []string) error {
	if len(f) != 2 {
		return errors.New("want `identity NAME`")
	}
	name := f[1]
	if err := validName(name); err != nil {
		return err
	}
	if prev, ok := pr.nameLine[name]; ok {
		return fmt.Errorf("identity %q is already defined on line %d", name, prev)
	}
	if len(pr.p.identities) >= maxIdentities {
		return fmt.Errorf("more than %d identities", maxIdentities)
	}
	pr.nameLine[name] = n
	pr.cur = &Identity{Name: name, Index: len(pr.p.identities)}
	pr.quotaSeen = map[string]int{}
	pr.p.identities = append(pr.p.identities, pr.cur)
	pr.p.byName[name] = pr.cur
	return nil
}

// validName: names appear in logs, metrics labels and the observatory.
func validName(name string) error {
	if name == "" || len(name) > maxNameLen {
		return fmt.Errorf("identity name must be 1 to %d characters", maxNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '@') {
			return fmt.Errorf("identity name %q: only letters, digits and - _ . @ are allowed", name)
		}
	}
	return nil
}

func (pr *parser) token(f []string) error {
	if len(f) != 2 {
		return errors.New("want `token sha256:<64 hex digits>`")
	}
	hexSum, ok := strings.CutPrefix(f[1], "sha256:")
	sum, err := hex.DecodeString(hexSum)
	if !ok || err != nil || len(sum) != sha256.Size {
		return errors.New("a token is stored as sha256:<64 hex digits>, the SHA-256 of the token, never in clear " +
			"(`dflockd policy hash` prints the line for a token)")
	}
	var key [sha256.Size]byte
	copy(key[:], sum)
	if other, dup := pr.tokenLine[key]; dup {
		return fmt.Errorf("this token is already identity %q's", other)
	}
	pr.tokenLine[key] = pr.cur.Name
	pr.cur.tokens = append(pr.cur.tokens, key)
	return nil
}

func (pr *parser) cert(f []string) error {
	if len(f) != 2 {
		return errors.New("want `cert NAME` (a client certificate's common name or subject alternative name)")
	}
	if other, dup := pr.certLine[f[1]]; dup {
		return fmt.Errorf("certificate name %q is already identity %q's", f[1], other)
	}
	pr.certLine[f[1]] = pr.cur.Name
	pr.cur.certs = append(pr.cur.certs, f[1])
	pr.p.byCert[f[1]] = pr.cur
	return nil
}

func (pr *parser) rule(n int, f []string) error {
	if len(f) != 3 {
		return fmt.Errorf("want `%s CLASSES PATTERN` (classes: %s, or *)", f[0], ClassNames())
	}
	classes, err := parseClasses(f[1])
	if err != nil {
		return err
	}
	if len(f[2]) > maxPatternLen {
		return fmt.Errorf("pattern longer than %d bytes", maxPatternLen)
	}
	pat := ParsePattern(f[2])
	for _, r := range pr.cur.rules {
		if r.pat.Lit == pat.Lit && r.pat.Prefix == pat.Prefix && r.classes&classes != 0 {
			return fmt.Errorf("pattern %q names a class that the rule on line %d names for the same pattern: "+
				"neither would be the longest match; name each class once per pattern", f[2], r.line)
		}
	}
	if pr.rules++; pr.rules > maxRules {
		return fmt.Errorf("more than %d rules", maxRules)
	}
	pr.cur.rules = append(pr.cur.rules, rule{pat: pat, classes: classes, allow: f[0] == "allow", line: n})
	return nil
}

func parseClasses(s string) (Classes, error) {
	if s == "*" {
		return AllClasses, nil
	}
	var cs Classes
	for _, name := range strings.Split(s, ",") {
		c, ok := ClassNamed(name)
		if !ok {
			return 0, fmt.Errorf("unknown class %q (classes: %s, or * for all)", name, ClassNames())
		}
		cs |= 1 << c
	}
	return cs, nil
}

func (pr *parser) quota(n int, f []string) error {
	if len(f) < 2 {
		return errors.New("want `quota NAME=N ...` (names: locks, waiters, keys, conns, rate)")
	}
	q := &pr.cur.Quota
	for _, kv := range f[1:] {
		name, val, ok := strings.Cut(kv, "=")
		v, err := strconv.ParseInt(val, 10, 64)
		if !ok || err != nil || v < 0 {
			return fmt.Errorf("quota %q: want NAME=N with N a whole number >= 0", kv)
		}
		if prev, dup := pr.quotaSeen[name]; dup {
			return fmt.Errorf("quota %q is already set on line %d", name, prev)
		}
		switch name {
		case "locks":
			q.Locks = v
		case "waiters":
			q.Waiters = v
		case "keys":
			q.Keys = v
		case "conns":
			q.Conns = v
		case "rate":
			q.Rate = v
		default:
			return fmt.Errorf("unknown quota %q (names: locks, waiters, keys, conns, rate)", name)
		}
		pr.quotaSeen[name] = n
	}
	return nil
}

// describe names a rule for explanations: its line and text.
func (r *rule) describe() string {
	verb := "deny"
	if r.allow {
		verb = "allow"
	}
	var names []string
	for c := Class(0); c < numClasses; c++ {
		if r.classes.Has(c) {
			names = append(names, c.String())
		}
	}
	return fmt.Sprintf("line %d: %s %s %s", r.line, verb, strings.Join(names, ","), r.pat.Text)
}
