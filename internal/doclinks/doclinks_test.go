package doclinks

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// TestRepoLinks checks every Markdown file of the repository: a section
// moved to another page, a page renamed or an anchor reworded fails here
// with the file and line of each link it broke.
func TestRepoLinks(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files := markdownFiles(t, root)
	if len(files) < 5 {
		t.Fatalf("found %d Markdown files under %s (%v): the README and docs/ at least were expected", len(files), root, files)
	}
	broken, err := Check(root, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Error(b)
	}
	t.Logf("%d Markdown files checked", len(files))
}

// markdownFiles lists the repository's Markdown files, relative to root:
// git's, tracked or new and not ignored (a page being written is
// checked before it is added); without git, every *.md outside hidden
// folders.
func markdownFiles(t *testing.T, root string) []string {
	cmd := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "*.md")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		var files []string
		for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			// A file deleted in the work tree but still in the index
			// is not there to check.
			if _, err := os.Stat(filepath.Join(root, f)); f != "" && err == nil {
				files = append(files, f)
			}
		}
		sort.Strings(files)
		return compact(files)
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func compact(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// The checker itself, on a tree of fixtures: each kind of broken link
// is reported at its line, and each kind of good one is not.
func TestCheckFindsBrokenLinks(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", strings.Join([]string{
		"# Title", // 1
		"[good page](docs/a.md) [good anchor](docs/a.md#the-section---v2-rf)", // 2
		"[missing page](docs/gone.md)",                                        // 3
		"[missing anchor](docs/a.md#no-such-section)",                         // 4
		"[self](#title) [self missing](#nothing)",                             // 5
		"```",                      // 6
		"[in a fence](nowhere.md)", // 7
		"```",                      // 8
		"`[in code](nowhere.md)` <!-- [commented](nowhere.md) -->", // 9
		"[wrapped over", // 10
		"lines](docs/a.md#again-1) [ext](https://example.com/x.md#y)", // 11
		`<img src="docs/pic.png"> <img src="docs/nopic.png">`,         // 12
		"[dir](docs/) [explicit](docs/a.md#kept) [out](../x.md)",      // 13
		"[code anchor](main.go#L3)",                                   // 14
	}, "\n"))
	write("docs/a.md", strings.Join([]string{
		"# A",
		"## The section: `--v2`, [rf](x.md)",
		"## Again",
		"## Again",
		`<a id="kept"></a>`,
		"```sh",
		"# not a heading",
		"```",
	}, "\n"))
	write("docs/pic.png", "")
	write("docs/x.md", "# X\n")
	write("main.go", "package main\n")
	got, err := Check(root, []string{"README.md", "docs/a.md"})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, b := range got {
		lines = append(lines, b.String())
	}
	want := []string{
		"README.md:3: docs/gone.md: no such file (docs/gone.md)",
		"README.md:4: docs/a.md#no-such-section: no heading or <a id> of docs/a.md has the anchor #no-such-section",
		"README.md:5: #nothing: no heading or <a id> of README.md has the anchor #nothing",
		"README.md:12: docs/nopic.png: no such file (docs/nopic.png)",
		"README.md:13: ../x.md: outside the repository",
	}
	sort.Strings(lines)
	sort.Strings(want)
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("Check:\n got %q\nwant %q", lines, want)
	}
}

func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"Profiles: `--compat=v2` (default), `v1`, `rf`":                         "profiles---compatv2-default-v1-rf",
		"Backup and restore: `dflockctl snapshot`, `dflockd snapshot restore`":  "backup-and-restore-dflockctl-snapshot-dflockd-snapshot-restore",
		"HTTP on cluster members, `/v1/readindex`, adding and removing members": "http-on-cluster-members-v1readindex-adding-and-removing-members",
		"Cluster quick start (three members on one machine)":                    "cluster-quick-start-three-members-on-one-machine",
		"DflockdNoLeader":                      "dflockdnoleader",
		"snake_case and [a link](x.md) — dash": "snake_case-and-a-link--dash",
	} {
		if got := Slug(h); got != want {
			t.Errorf("Slug(%q) = %q, want %q", h, got, want)
		}
	}
}
