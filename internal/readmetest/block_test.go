package readmetest

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	readme := strings.Join([]string{
		"# Title",                                // 1
		"<!-- quickstart: demo file main.go -->", // 2
		"```go",                                  // 3
		"package main",                           // 4
		"```",                                    // 5
		"",                                       // 6
		"<!-- quickstart: demo needs curl jq -->", // 7
		"```console",         // 8
		"$ f() { echo a; \\", // 9
		"    echo b; }",      // 10
		"$ f",                // 11
		"a",                  // 12
		"  b indented, output: not a continuation", // 13
		"$ true",                     // 14
		"```",                        // 15
		"<!-- quickstart: other -->", // 16
		"```console",                 // 17
		"$ echo 6388",                // 18
		"6388",                       // 19
		"```",                        // 20
	}, "\n")
	got, err := Parse("docs/x.md", []byte(readme))
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{
		{Name: "demo", File: "docs/x.md", Line: 7, Needs: []string{"curl", "jq"}, Steps: []Step{
			{Line: 9, Command: "f() { echo a; \\\n    echo b; }"},
			{Line: 11, Command: "f", Want: []string{"a", "  b indented, output: not a continuation"}},
			{Line: 14, Command: "true"},
		}, Files: []File{{Path: "main.go", Text: "package main\n"}}},
		{Name: "other", File: "docs/x.md", Line: 16, Needs: []string{}, Steps: []Step{
			{Line: 18, Command: "echo 6388", Want: []string{"6388"}},
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse:\n got %#v\nwant %#v", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, readme, want string }{
		{"no fence", "<!-- quickstart: a -->\ntext", "not followed by a ``` block"},
		{"unclosed", "<!-- quickstart: a -->\n```console\n$ true", "never closed"},
		{"output first", "<!-- quickstart: a -->\n```console\nok\n$ true\n```", "docs/x.md:3: output before"},
		{"empty", "<!-- quickstart: a -->\n```console\n```", "without a command"},
		{"twice", "<!-- quickstart: a -->\n```console\n$ true\n```\n<!-- quickstart: a -->\n```console\n$ true\n```", "second quickstart"},
		{"orphan file", "<!-- quickstart: a file x -->\n```\nx\n```", "has no console block"},
		{"bad marker", "<!-- quickstart: a wants x -->\n```\nx\n```", "want NAME"},
		{"no name", "<!-- quickstart:  -->\n```\nx\n```", "without a name"},
	} {
		_, err := Parse("docs/x.md", []byte(tc.readme))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func TestStepMatch(t *testing.T) {
	s := Step{Want: []string{"ok … 60", "time=… msg=x (a.b)", "…"}}
	for _, tc := range []struct {
		got  []string
		want bool
	}{
		{[]string{"ok 18ea 60", "time=1 msg=x (a.b)", ""}, true},
		{[]string{"ok  60", "time= msg=x (a.b)", "anything"}, true},
		{[]string{"ok 18ea 33", "time=1 msg=x (a.b)", ""}, false},     // literal part differs
		{[]string{"ok 18ea 60", "time=1 msg=x (aXb)", ""}, false},     // regexp characters are literal
		{[]string{"ok 18ea 60", "time=1 msg=x (a.b)"}, false},         // a line missing
		{[]string{"ok 18ea 60", "time=1 msg=x (a.b)", "", ""}, false}, // a line more
		{[]string{"xok 1 60", "time=1 msg=x (a.b)", ""}, false},       // anchored
	} {
		if got := s.Match(tc.got); got != tc.want {
			t.Errorf("Match(%q) = %v, want %v", tc.got, got, tc.want)
		}
	}
}

func TestReplaceWholeNumbers(t *testing.T) {
	b := Block{
		Steps: []Step{{Command: "dflockd --port 6391 & pid[6391]=$!; echo 16391 63911 6391,6391", Want: []string{"addr=127.0.0.1:6391 …"}}},
		Files: []File{{Path: "f", Text: `"127.0.0.1:6388"`}},
	}
	if got := b.Numbers([]string{"6388", "6391", "6392"}); !reflect.DeepEqual(got, []string{"6388", "6391"}) {
		t.Errorf("Numbers = %q, want [6388 6391]", got)
	}
	r := b.Replace(map[string]string{"6391": "23456", "6388": "34567"})
	if got, want := r.Steps[0].Command, "dflockd --port 23456 & pid[23456]=$!; echo 16391 63911 23456,23456"; got != want {
		t.Errorf("command\n got %q\nwant %q", got, want)
	}
	if got, want := r.Steps[0].Want[0], "addr=127.0.0.1:23456 …"; got != want {
		t.Errorf("shown line %q, want %q", got, want)
	}
	if got, want := r.Files[0].Text, `"127.0.0.1:34567"`; got != want {
		t.Errorf("file %q, want %q", got, want)
	}
	if b.Steps[0].Command != "dflockd --port 6391 & pid[6391]=$!; echo 16391 63911 6391,6391" {
		t.Errorf("Replace changed the original block")
	}
}

func TestSplitOutput(t *testing.T) {
	b := Block{Steps: []Step{{Command: "a"}, {Command: "b"}, {Command: "c"}, {Command: "d"}}}
	script := b.Script()
	for i, c := range []string{"a", "b", "c", "d"} {
		if !strings.Contains(script, "printf '\\036"+string(rune('0'+i))+"\\n'\n"+c+"\n") {
			t.Fatalf("script lacks step %d's mark before %q:\n%s", i, c, script)
		}
	}
	for _, tc := range []struct {
		name  string
		out   string
		lines [][]string
		ran   int
	}{
		{"all", "\x1e0\nx\ny\n\x1e1\n\x1e2\nno newline\x1e3\n\n\x1e4\n", [][]string{{"x", "y"}, nil, {"no newline"}, {""}}, 4},
		{"stopped in step 2", "\x1e0\nx\n\x1e1\n\x1e2\npartial", [][]string{{"x"}, nil, {"partial"}, nil}, 2},
		{"nothing", "", [][]string{nil, nil, nil, nil}, 0},
	} {
		lines, ran := SplitOutput([]byte(tc.out), 4)
		if !reflect.DeepEqual(lines, tc.lines) || ran != tc.ran {
			t.Errorf("%s: SplitOutput = %q, %d; want %q, %d", tc.name, lines, ran, tc.lines, tc.ran)
		}
	}
}
