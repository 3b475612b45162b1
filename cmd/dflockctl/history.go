package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// Prompt history, kept in a file across sessions like redis-cli's.
const (
	envHistFile = "DFLOCKCTL_HISTFILE" // path of the history file (/dev/null: keep none)
	histFile    = ".dflockctl_history" // in $HOME otherwise
	histMax     = 1000                 // entries kept
)

// history implements term.History: the lines read, oldest first, each
// new one appended to the file as well.
type history struct {
	path    string
	entries []string
}

// histPath is $DFLOCKCTL_HISTFILE if set, else ~/.dflockctl_history, else
// "" (history for the session only).
func histPath(getenv func(string) string) string {
	if p := getenv(envHistFile); p != "" {
		return p
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, histFile)
	}
	return ""
}

func loadHistory(path string) *history {
	h := &history{path: path}
	if path == "" {
		return h
	}
	f, err := os.Open(path)
	if err != nil {
		return h // none yet
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			h.entries = append(h.entries, l)
		}
	}
	if n := len(h.entries); n > histMax {
		h.entries = h.entries[n-histMax:]
	}
	return h
}

// Add records a line, except blank ones, repeats of the previous one and
// auth requests, whose token must not end up in a file.
func (h *history) Add(entry string) {
	entry = strings.TrimSpace(entry)
	if entry == "" || (len(h.entries) > 0 && h.entries[len(h.entries)-1] == entry) {
		return
	}
	if w, _ := splitWords(entry); len(w) > 0 && (w[0] == "auth" || (len(w) > 1 && w[0] == "raw" && w[1] == "auth")) {
		return
	}
	h.entries = append(h.entries, entry)
	if len(h.entries) > histMax {
		h.entries = h.entries[1:]
	}
	if h.path == "" {
		return
	}
	// Losing history is not worth an error message in the middle of work.
	if f, err := os.OpenFile(h.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
		f.WriteString(entry + "\n")
		f.Close()
	}
}

func (h *history) Len() int { return len(h.entries) }

// At returns the idx-th most recent entry.
func (h *history) At(idx int) string { return h.entries[len(h.entries)-1-idx] }
