// Package doclinks finds broken relative links in Markdown files, so that
// moving a section from one page to another (issue #36 split the README
// into docs/) cannot leave a link behind pointing at nothing. A link is
// checked as GitHub renders it: its file must exist, and an anchor into a
// Markdown file must be one of its headings' anchors (GitHub's slugs) or
// an explicit <a id> or <a name>. Links to other sites are not followed.
// The package reads only the files it is asked about; its test runs it
// over the repository.
package doclinks

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Broken is one link that leads nowhere.
type Broken struct {
	File   string // the Markdown file it is in, relative to the root
	Line   int
	Target string // as written
	Reason string
}

func (b Broken) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", b.File, b.Line, b.Target, b.Reason)
}

// Link is a relative link of a Markdown file.
type Link struct {
	Line   int
	Target string // as written: path, path#anchor, or #anchor
}

var (
	// A fence opens and closes a code block, possibly indented (in a
	// list item); links and headings inside are text.
	fence = regexp.MustCompile("^\\s*(```|~~~)")
	// An inline link or image, its text possibly over several lines
	// (a link wrapped with its paragraph), with an optional title.
	inline = regexp.MustCompile(`\]\(\s*<?([^()\s<>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// A reference definition: [name]: target.
	reference = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s+<?([^\s>]+)>?`)
	// HTML attributes that name another file: <img src>, <a href>.
	attribute = regexp.MustCompile(`\b(?:src|href)="([^"]+)"`)
	// Explicit anchors: <a id="x"> or <a name="x">.
	explicit = regexp.MustCompile(`<a\s+(?:[^>]*\s)?(?:id|name)="([^"]+)"`)
	heading  = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	// Inline code and HTML comments hold text that only looks like a
	// link: `[x](y)` in a code span is shown, not followed.
	codeSpan = regexp.MustCompile("`+[^`\n]*`+")
	comment  = regexp.MustCompile(`(?s)<!--.*?-->`)
	// In a heading, a link's text is what the slug is made of.
	headingLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	external    = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`) // http:, https:, mailto:
)

// prose returns the text with fenced code blocks, code spans and HTML
// comments blanked out (newlines kept, so offsets still give lines).
func prose(text string) string {
	lines := strings.Split(text, "\n")
	in := false
	for i, l := range lines {
		if fence.MatchString(l) {
			in = !in
			lines[i] = ""
			continue
		}
		if in {
			lines[i] = ""
		}
	}
	out := strings.Join(lines, "\n")
	blank := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '\n' {
				return r
			}
			return ' '
		}, s)
	}
	out = comment.ReplaceAllStringFunc(out, blank)
	return codeSpan.ReplaceAllStringFunc(out, blank)
}

// Links returns the relative links of a Markdown text: inline links and
// images, reference definitions and src/href attributes, outside code.
// Links with a scheme (https:, mailto:) are left out.
func Links(text []byte) []Link {
	p := prose(strings.ReplaceAll(string(text), "\r\n", "\n"))
	var links []Link
	for _, re := range []*regexp.Regexp{inline, reference, attribute} {
		for _, m := range re.FindAllStringSubmatchIndex(p, -1) {
			target := p[m[2]:m[3]]
			if external.MatchString(target) {
				continue
			}
			links = append(links, Link{Line: 1 + strings.Count(p[:m[2]], "\n"), Target: target})
		}
	}
	return links
}

// Anchors returns the anchors a Markdown text defines: each heading's
// slug as GitHub makes it (a repeated one gets -1, -2, ...) and every
// explicit <a id> or <a name>.
func Anchors(text []byte) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	lines := strings.Split(strings.ReplaceAll(string(text), "\r\n", "\n"), "\n")
	in := false
	for _, l := range lines {
		if fence.MatchString(l) {
			in = !in
			continue
		}
		if in {
			continue
		}
		for _, m := range explicit.FindAllStringSubmatch(l, -1) {
			anchors[m[1]] = true
		}
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := Slug(m[2])
		if n := seen[s]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			anchors[s] = true
		}
		seen[s]++
	}
	return anchors
}

// Slug is the anchor GitHub gives a heading: its text as rendered (a
// link's text, no Markdown marks) in lower case, with every character
// but letters, digits, spaces, hyphens and underscores dropped and each
// space made a hyphen.
func Slug(h string) string {
	h = headingLink.ReplaceAllString(h, "$1")
	var sb strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			sb.WriteByte('-')
		case r == '-', r == '_', unicode.IsLetter(r), unicode.IsDigit(r), unicode.Is(unicode.Mn, r):
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// Check returns the broken links of the Markdown files (paths relative
// to root, with / separators). A target is resolved from its file's
// folder; it must exist, and an anchor into a .md file (or into the file
// itself) must be one of its Anchors.
func Check(root string, files []string) ([]Broken, error) {
	anchors := map[string]map[string]bool{} // by path relative to root
	anchorsOf := func(rel string) (map[string]bool, error) {
		if a, ok := anchors[rel]; ok {
			return a, nil
		}
		text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		anchors[rel] = Anchors(text)
		return anchors[rel], nil
	}
	var broken []Broken
	for _, f := range files {
		text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		for _, l := range Links(text) {
			path, anchor, _ := strings.Cut(l.Target, "#")
			rel := f // "#anchor": this file
			if path != "" {
				rel = filepath.ToSlash(filepath.Join(filepath.Dir(f), filepath.FromSlash(path)))
			}
			bad := func(reason string) {
				broken = append(broken, Broken{File: f, Line: l.Line, Target: l.Target, Reason: reason})
			}
			if strings.HasPrefix(rel, "../") || rel == ".." {
				bad("outside the repository")
				continue
			}
			info, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
			if err != nil {
				bad(fmt.Sprintf("no such file (%s)", rel))
				continue
			}
			if anchor == "" || info.IsDir() || !strings.HasSuffix(rel, ".md") {
				continue
			}
			a, err := anchorsOf(rel)
			if err != nil {
				return nil, err
			}
			if !a[anchor] {
				bad(fmt.Sprintf("no heading or <a id> of %s has the anchor #%s", rel, anchor))
			}
		}
	}
	return broken, nil
}
