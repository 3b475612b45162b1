package suite

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The generated section of PERF.md lies between these two lines.
const (
	BeginMarker = "<!-- suite:begin -->"
	EndMarker   = "<!-- suite:end -->"
)

// Section is one generated part of PERF.md: the text between two marker
// lines. Each is rewritten only by a run that measured its content, so a
// run of some workloads leaves the other sections' figures alone.
type Section struct{ Begin, End string }

// Generated sections.
var (
	// CoreSection: locks (lock, hot workloads) and memory.
	CoreSection = Section{BeginMarker, EndMarker}
	// PrimitivesSection: counters, KV and lists, against Redis.
	PrimitivesSection = Section{"<!-- suite:primitives:begin -->", "<!-- suite:primitives:end -->"}
	// FanoutSection: pub/sub fan-out.
	FanoutSection = Section{"<!-- suite:fanout:begin -->", "<!-- suite:fanout:end -->"}
	// ClusterSection: a 3-member cluster against the single node and a
	// 3-member etcd, and its failover time.
	ClusterSection = Section{"<!-- suite:cluster:begin -->", "<!-- suite:cluster:end -->"}
)

// ErrMarkers reports a PERF.md whose markers are not one begin line
// followed by one end line.
var ErrMarkers = errors.New("suite: PERF.md markers")

// findLine returns the offsets of every line of doc equal to line
// (ignoring a trailing CR): start of the line and just past its newline.
func findLine(doc []byte, line string) (starts, ends []int) {
	off := 0
	for off < len(doc) {
		nl := bytes.IndexByte(doc[off:], '\n')
		end := len(doc)
		next := len(doc)
		if nl >= 0 {
			end = off + nl
			next = end + 1
		}
		if string(bytes.TrimSuffix(doc[off:end], []byte("\r"))) == line {
			starts = append(starts, off)
			ends = append(ends, next)
		}
		off = next
	}
	return starts, ends
}

// ReplaceSection returns doc with the text between the marker lines
// replaced by body. Everything outside the markers, the marker lines
// included, is kept byte for byte. When doc has neither marker, both are
// appended at its end (after a newline if doc lacks a final one). A lone
// marker, repeated markers or an end before the begin is an error: the
// file was edited by hand and guessing could destroy someone's text.
func ReplaceSection(doc, body []byte) ([]byte, error) { return CoreSection.Replace(doc, body) }

// Replace is ReplaceSection for the section's own markers.
func (sec Section) Replace(doc, body []byte) ([]byte, error) {
	bs, be := findLine(doc, sec.Begin)
	es, _ := findLine(doc, sec.End)
	if len(bs) == 0 && len(es) == 0 {
		out := append([]byte(nil), doc...)
		if len(out) > 0 && out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		out = append(out, sec.Begin+"\n"...)
		out = appendBody(out, body)
		return append(out, sec.End+"\n"...), nil
	}
	if len(bs) != 1 || len(es) != 1 || es[0] < be[0] {
		return nil, fmt.Errorf("%w: want exactly one %q line followed by one %q line, found %d and %d",
			ErrMarkers, sec.Begin, sec.End, len(bs), len(es))
	}
	if be[0] > len(doc) || doc[be[0]-1] != '\n' {
		return nil, fmt.Errorf("%w: %q is the last line without a newline", ErrMarkers, sec.Begin)
	}
	out := append([]byte(nil), doc[:be[0]]...)
	out = appendBody(out, body)
	return append(out, doc[es[0]:]...), nil
}

func appendBody(out, body []byte) []byte {
	out = append(out, body...)
	if len(body) > 0 && body[len(body)-1] != '\n' {
		out = append(out, '\n')
	}
	return out
}

// WriteSection rewrites the generated section of the file at path
// (creating the file if missing) through a temporary file and a rename.
func WriteSection(path string, body []byte) error { return CoreSection.Write(path, body) }

// Write is WriteSection for the section's own markers.
func (sec Section) Write(path string, body []byte) error {
	doc, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	out, err := sec.Replace(doc, body)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".perf-*.md")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	_ = os.Chmod(tmp.Name(), 0o644)
	return os.Rename(tmp.Name(), path)
}
