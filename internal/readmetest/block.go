// Package readmetest turns the quick starts of the README and of docs/
// into tests, so that what a newcomer pastes is what CI ran (issue: "a
// README that works when pasted"). A quick start is a console block
// preceded by a marker:
//
//	<!-- quickstart: NAME [needs PROGRAM...] -->
//	```console
//	$ command
//	    continuation of the command (indented)
//	a line it prints, … standing for any text
//	```
//
// and any number of files it uses, each a code block preceded by
// <!-- quickstart: NAME file PATH -->. Parse reads them; Script and
// SplitOutput let a test run a block in bash and hand each command its
// own output, which Step.Match compares with the lines shown. This
// package does no I/O and starts nothing: the test in this folder does.
package readmetest

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Wildcard in a line shown after a command stands for any text, possibly
// empty: a token, a time, a PID, the number of event loops.
const Wildcard = "…"

// Block is one quick start.
type Block struct {
	Name  string
	File  string   // the Markdown file it is in, as given to Parse
	Line  int      // the line of its console block's marker
	Needs []string // programs it runs beyond bash, coreutils and the binaries under test
	Steps []Step
	Files []File
}

// Step is one command of a block and the lines it is shown to print.
type Step struct {
	Line    int      // the line of its "$ "
	Command string   // without the "$ ", continuation lines joined by "\n"
	Want    []string // the lines shown after it, Wildcard included
}

// File is a file a block's commands use, written into the block's
// directory before they run.
type File struct {
	Path string
	Text string
}

var marker = regexp.MustCompile(`^<!-- quickstart: (.*?) -->$`)

// Parse returns the quick starts of the Markdown text of file in the
// order their console blocks appear; file names the text in errors and
// in each Block.
func Parse(file string, text []byte) ([]Block, error) {
	lines := strings.Split(strings.ReplaceAll(string(text), "\r\n", "\n"), "\n")
	var blocks []Block
	index := map[string]int{}    // name → position in blocks
	files := map[string][]File{} // files of names whose console block may come later
	fileLine := map[string]int{} // where a name's first file was marked
	for i := 0; i < len(lines); i++ {
		m := marker.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		at := i + 1 // 1-based line of the marker
		words := strings.Fields(m[1])
		if len(words) == 0 {
			return nil, fmt.Errorf("%s:%d: quickstart marker without a name", file, at)
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			return nil, fmt.Errorf("%s:%d: quickstart marker not followed by a ``` block", file, at)
		}
		body, end, err := fenced(file, lines, i+1)
		if err != nil {
			return nil, err
		}
		name, rest := words[0], words[1:]
		switch {
		case len(rest) == 2 && rest[0] == "file":
			files[name] = append(files[name], File{Path: rest[1], Text: strings.Join(body, "\n") + "\n"})
			if _, ok := fileLine[name]; !ok {
				fileLine[name] = at
			}
		case len(rest) == 0 || rest[0] == "needs":
			if _, dup := index[name]; dup {
				return nil, fmt.Errorf("%s:%d: a second quickstart named %q", file, at, name)
			}
			steps, err := parseSteps(file, body, i+3)
			if err != nil {
				return nil, err
			}
			index[name] = len(blocks)
			blocks = append(blocks, Block{Name: name, File: file, Line: at, Needs: rest[min(1, len(rest)):], Steps: steps})
		default:
			return nil, fmt.Errorf("%s:%d: quickstart marker %q: want NAME, NAME needs PROGRAM..., or NAME file PATH", file, at, m[1])
		}
		i = end
	}
	for name, fs := range files {
		j, ok := index[name]
		if !ok {
			return nil, fmt.Errorf("%s:%d: file of quickstart %q, which has no console block", file, fileLine[name], name)
		}
		blocks[j].Files = fs
	}
	return blocks, nil
}

// fenced returns the lines inside the fence opened at lines[open] and the
// index of its closing line.
func fenced(file string, lines []string, open int) ([]string, int, error) {
	for j := open + 1; j < len(lines); j++ {
		if lines[j] == "```" {
			return lines[open+1 : j], j, nil
		}
	}
	return nil, 0, fmt.Errorf("%s:%d: ``` block never closed", file, open+1)
}

// parseSteps reads a console block whose first line is line first of file.
// A line starting with "$ " is a command; indented lines right after it
// continue it (as a pasted multi-line command does); every other line is
// output of the command above it. So an output line cannot start with a
// blank directly under its command.
func parseSteps(file string, body []string, first int) ([]Step, error) {
	var steps []Step
	for k, l := range body {
		line := first + k
		switch {
		case strings.HasPrefix(l, "$ "):
			steps = append(steps, Step{Line: line, Command: l[2:]})
		case len(steps) == 0:
			return nil, fmt.Errorf("%s:%d: output before the first \"$ \" command", file, line)
		case len(steps[len(steps)-1].Want) == 0 && (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")):
			steps[len(steps)-1].Command += "\n" + l
		default:
			steps[len(steps)-1].Want = append(steps[len(steps)-1].Want, l)
		}
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("%s:%d: console block without a command", file, first)
	}
	return steps, nil
}

// Match reports whether got are the lines the step shows.
func (s Step) Match(got []string) bool {
	if len(got) != len(s.Want) {
		return false
	}
	for i, w := range s.Want {
		if !wantPattern(w).MatchString(got[i]) {
			return false
		}
	}
	return true
}

// wantPattern is a shown line as an anchored regexp: literal text, with
// Wildcard matching any run of characters.
func wantPattern(line string) *regexp.Regexp {
	parts := strings.Split(line, Wildcard)
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`^` + strings.Join(parts, `.*`) + `$`)
}

// Numbers returns the whole numbers among candidates that occur in the
// block: its commands, shown lines or files.
func (b Block) Numbers(candidates []string) []string {
	text := b.text()
	var found []string
	for _, c := range candidates {
		if wholeNumbers([]string{c}).MatchString(text) {
			found = append(found, c)
		}
	}
	return found
}

// Replace returns the block with each whole number that is a key of
// repl replaced by its value, everywhere: a test moves the README's
// ports (6388, …) to free ones this way, the commands and what they
// print alike.
func (b Block) Replace(repl map[string]string) Block {
	if len(repl) == 0 {
		return b
	}
	keys := make([]string, 0, len(repl))
	for k := range repl {
		keys = append(keys, k)
	}
	re := wholeNumbers(keys)
	sub := func(s string) string {
		return re.ReplaceAllStringFunc(s, func(n string) string { return repl[n] })
	}
	out := b
	out.Steps = make([]Step, len(b.Steps))
	for i, s := range b.Steps {
		want := make([]string, len(s.Want))
		for j, w := range s.Want {
			want[j] = sub(w)
		}
		out.Steps[i] = Step{Line: s.Line, Command: sub(s.Command), Want: want}
	}
	out.Files = make([]File, len(b.Files))
	for i, f := range b.Files {
		out.Files[i] = File{Path: f.Path, Text: sub(f.Text)}
	}
	return out
}

func (b Block) text() string {
	var sb strings.Builder
	for _, s := range b.Steps {
		sb.WriteString(s.Command + "\n" + strings.Join(s.Want, "\n") + "\n")
	}
	for _, f := range b.Files {
		sb.WriteString(f.Text)
	}
	return sb.String()
}

// wholeNumbers matches any of ns where it is a word of its own: 6388 in
// "127.0.0.1:6388" and "pid[6388]", not in "16388".
func wholeNumbers(ns []string) *regexp.Regexp {
	quoted := make([]string, len(ns))
	for i, n := range ns {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return regexp.MustCompile(`\b(?:` + strings.Join(quoted, "|") + `)\b`)
}

// stepMark is written before each step's command and after the last one:
// a record separator, the step's index and a newline. Output that did
// not end in a newline ends where the mark begins.
const stepMark = '\x1e'

// Script is the block as a bash script that writes a mark to stdout
// before each command and after the last, for SplitOutput.
func (b Block) Script() string {
	var sb strings.Builder
	for i, s := range b.Steps {
		fmt.Fprintf(&sb, "printf '\\036%d\\n'\n%s\n", i, s.Command)
	}
	fmt.Fprintf(&sb, "printf '\\036%d\\n'\n", len(b.Steps))
	return sb.String()
}

// SplitOutput cuts the output of a Script run (stdout and stderr
// together) into the lines each of n steps printed. ran is the number
// of steps that finished: fewer than n when the script stopped early
// (killed at its time limit, or a command that ended the shell); the
// step that was running then gets the output it had printed.
func SplitOutput(out []byte, n int) (lines [][]string, ran int) {
	lines = make([][]string, n)
	cur := -1 // the step whose output is being read
	for len(out) > 0 {
		i := bytes.IndexByte(out, stepMark)
		text := out
		if i >= 0 {
			text = out[:i]
		}
		if cur >= 0 && cur < n {
			lines[cur] = append(lines[cur], splitLines(text)...)
		}
		if i < 0 {
			break
		}
		out = out[i+1:]
		j := bytes.IndexByte(out, '\n')
		if j < 0 {
			break
		}
		k, err := strconv.Atoi(string(out[:j]))
		if err != nil {
			break
		}
		cur, ran = k, k
		out = out[j+1:]
	}
	return lines, ran
}

// splitLines cuts b into lines; a final newline ends the last line
// rather than starting an empty one.
func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}
