package suite

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReplaceSectionKeepsOutsideBytes(t *testing.T) {
	pre := "# PERF\r\n\nhand-written ✓ text\n\n" + BeginMarker + "\n"
	post := EndMarker + "\n\ntrailing text without newline"
	doc := []byte(pre + "old generated\nlines\n" + post)
	for _, body := range []string{"new body\n", "no final newline", ""} {
		out, err := ReplaceSection(doc, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(out, []byte(pre)) || !bytes.HasSuffix(out, []byte(post)) {
			t.Fatalf("outside text changed:\n%q", out)
		}
		mid := string(out[len(pre) : len(out)-len(post)])
		if strings.TrimSuffix(mid, "\n") != strings.TrimSuffix(body, "\n") {
			t.Fatalf("section = %q, want %q", mid, body)
		}
		// Rewriting again with the same body is a fixed point.
		again, err := ReplaceSection(out, []byte(body))
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %v\n%q\n%q", err, again, out)
		}
	}
}

func TestReplaceSectionAppendsMarkers(t *testing.T) {
	for _, doc := range []string{"", "text\n", "text without newline"} {
		out, err := ReplaceSection([]byte(doc), []byte("gen\n"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(out), doc) {
			t.Fatalf("prefix changed: %q", out)
		}
		if !strings.HasSuffix(string(out), BeginMarker+"\ngen\n"+EndMarker+"\n") {
			t.Fatalf("markers not appended: %q", out)
		}
	}
}

func TestReplaceSectionRejectsBrokenMarkers(t *testing.T) {
	for _, doc := range []string{
		BeginMarker + "\nx\n",
		"x\n" + EndMarker + "\n",
		EndMarker + "\n" + BeginMarker + "\n",
		BeginMarker + "\n" + BeginMarker + "\n" + EndMarker + "\n",
	} {
		if _, err := ReplaceSection([]byte(doc), []byte("y\n")); !errors.Is(err, ErrMarkers) {
			t.Errorf("%q: err = %v, want ErrMarkers", doc, err)
		}
	}
	// A marker inside a line is text, not a marker.
	doc := "see `" + BeginMarker + "` below\n"
	out, err := ReplaceSection([]byte(doc), []byte("y\n"))
	if err != nil || !strings.HasPrefix(string(out), doc) {
		t.Fatalf("inline marker mistaken: %v %q", err, out)
	}
}

func TestAggregate(t *testing.T) {
	cases := []struct {
		in   []float64
		want Stat
	}{
		{nil, Stat{}},
		{[]float64{5}, Stat{5, 5, 5, 1}},
		{[]float64{3, 1, 2}, Stat{2, 1, 3, 3}},
		{[]float64{4, 1, 3, 2}, Stat{2.5, 1, 4, 4}},
	}
	for _, c := range cases {
		if got := Aggregate(c.in); got != c.want {
			t.Errorf("Aggregate(%v) = %+v, want %+v", c.in, got, c.want)
		}
	}
	in := []float64{3, 1, 2}
	Aggregate(in)
	if in[0] != 3 {
		t.Error("Aggregate sorted its argument in place")
	}
}

func TestCells(t *testing.T) {
	recs := []Record{
		{Target: "ng", Workload: "lock", Conns: 10, Depth: 1, Rep: 1, PairsPerS: 100, P99Ns: 30, CPUPerPairNs: 5},
		{Target: "ng", Workload: "lock", Conns: 10, Depth: 1, Rep: 2, PairsPerS: 300, P99Ns: 10, CPUPerPairNs: 7},
		{Target: "ng", Workload: "lock", Conns: 10, Depth: 1, Rep: 3, PairsPerS: 200, P99Ns: 20},
		{Target: "redis", Workload: "lock", Conns: 10, Depth: 1, Rep: 1, PairsPerS: 50, P99Ns: 40},
	}
	c := Cells(recs)
	ng := c[CellKey{"ng", "lock", 10, 1}]
	if ng.Pairs != (Stat{200, 100, 300, 3}) || ng.P99 != (Stat{20, 10, 30, 3}) || ng.CPUPerPair != (Stat{6, 5, 7, 2}) {
		t.Fatalf("ng cell = %+v", ng)
	}
	if r := c[CellKey{"redis", "lock", 10, 1}]; r.Pairs.Median != 50 || r.CPUPerPair.N != 0 {
		t.Fatalf("redis cell = %+v", r)
	}
	rep := &Report{Title: "t", Subject: "ng", Targets: []string{"ng", "redis"}, Records: recs}
	md := string(rep.Markdown())
	for _, want := range []string{"| 10 | 200 (100–300) |", "| ng/redis |", " 4.00× |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestChartSVGIsValidXML(t *testing.T) {
	for _, logY := range []bool{false, true} {
		c := &Chart{Title: "lock <depth 1> & more", XLabel: "connections", YLabel: "pairs/s", LogY: logY,
			Series: []Series{
				{Name: "ng", Points: []Point{{1, 1000}, {10, 50000}, {500, 400000}}},
				{Name: "a&b", Points: []Point{{10, 0}, {50, 2e6}}},
				{Name: "empty"},
			}}
		svg := c.SVG()
		d := xml.NewDecoder(bytes.NewReader(svg))
		var texts []string
		root := ""
		for {
			tok, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("logY=%v: invalid XML: %v\n%s", logY, err, svg)
			}
			switch v := tok.(type) {
			case xml.StartElement:
				if root == "" {
					root = v.Name.Local
				}
			case xml.CharData:
				texts = append(texts, string(v))
			}
		}
		if root != "svg" {
			t.Fatalf("root element %q", root)
		}
		all := strings.Join(texts, "|")
		for _, want := range []string{"lock <depth 1> & more", "connections", "pairs/s", "ng", "a&b", "500"} {
			if !strings.Contains(all, want) {
				t.Errorf("logY=%v: chart text lacks %q", logY, want)
			}
		}
	}
}
