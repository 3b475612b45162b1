package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
)

// emit prints a command's result: text, or with --json obj as one line of
// JSON. An empty text prints nothing.
func (c *cli) emit(g *globals, text string, obj any) {
	if g != nil && g.json {
		b, err := json.Marshal(obj)
		if err != nil {
			panic(fmt.Sprintf("dflockctl: result not JSON-encodable: %v", err)) // a bug: results are plain values
		}
		fmt.Fprintf(c.stdout, "%s\n", b)
		return
	}
	if text != "" {
		fmt.Fprintln(c.stdout, text)
	}
}

// rawJSON is a JSON document passed through as it is.
type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }

// statsTable renders the server's stats document for people: scalar
// fields first, then each non-empty array of objects as a table whose
// columns are the objects' fields, "key" first.
func statsTable(doc string) (string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &top); err != nil {
		return "", fmt.Errorf("stats: %w", err)
	}
	names := make([]string, 0, len(top))
	for k := range top {
		names = append(names, k)
	}
	slices.Sort(names)
	var b strings.Builder
	var tables []string
	for _, name := range names {
		var rows []map[string]any
		if json.Unmarshal(top[name], &rows) == nil {
			if len(rows) > 0 {
				tables = append(tables, name)
			}
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", name, top[name])
	}
	for _, name := range tables {
		var rows []map[string]any
		json.Unmarshal(top[name], &rows)
		fmt.Fprintf(&b, "\n%s:\n", name)
		writeTable(&b, rows)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func writeTable(b *strings.Builder, rows []map[string]any) {
	seen := map[string]bool{}
	var cols []string
	for _, r := range rows {
		for k := range r {
			if !seen[k] {
				seen[k] = true
				cols = append(cols, k)
			}
		}
	}
	slices.SortFunc(cols, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == "key":
			return -1
		case b == "key":
			return 1
		}
		return strings.Compare(a, b)
	})
	slices.SortFunc(rows, func(a, b map[string]any) int { return strings.Compare(fmt.Sprint(a["key"]), fmt.Sprint(b["key"])) })
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  "+strings.ToUpper(strings.Join(cols, "\t")))
	for _, r := range rows {
		cells := make([]string, len(cols))
		for i, col := range cols {
			if v, ok := r[col]; ok {
				cells[i] = fmt.Sprint(v)
			} else {
				cells[i] = "-"
			}
		}
		fmt.Fprintln(tw, "  "+strings.Join(cells, "\t"))
	}
	tw.Flush()
}
