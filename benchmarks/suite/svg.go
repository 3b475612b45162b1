package suite

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"sort"
	"strconv"
)

// Point is one (x, y) value of a series.
type Point struct{ X, Y float64 }

// Series is one line of a chart.
type Series struct {
	Name   string
	Points []Point
}

// Chart is a simple line chart: log-scaled x axis (connection counts),
// linear or logarithmic y axis, one line and legend entry per series.
type Chart struct {
	Title  string
	XLabel string
	YLabel string
	LogY   bool
	// YFormat formats a y tick; default %g with k/M suffixes.
	YFormat func(float64) string
	Series  []Series
}

var palette = []string{"#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"}

const (
	chartW, chartH         = 760, 440
	padL, padR, padT, padB = 88, 180, 48, 62
	plotW, plotH           = chartW - padL - padR, chartH - padT - padB
	legendX                = chartW - padR + 16
)

// SVG renders the chart as a standalone SVG document.
func (c *Chart) SVG() []byte {
	var xs []float64
	ymin, ymax := math.Inf(1), math.Inf(-1)
	seen := map[float64]bool{}
	for _, s := range c.Series {
		for _, p := range s.Points {
			if p.X <= 0 || math.IsNaN(p.Y) || math.IsInf(p.Y, 0) || (c.LogY && p.Y <= 0) {
				continue
			}
			if !seen[p.X] {
				seen[p.X] = true
				xs = append(xs, p.X)
			}
			ymin = math.Min(ymin, p.Y)
			ymax = math.Max(ymax, p.Y)
		}
	}
	sort.Float64s(xs)
	if len(xs) == 0 {
		xs = []float64{1, 10}
		ymin, ymax = 1, 10
	}
	xlo, xhi := math.Log10(xs[0]), math.Log10(xs[len(xs)-1])
	if xhi-xlo < 1e-9 {
		xlo, xhi = xlo-0.5, xhi+0.5
	}
	xlo, xhi = xlo-0.05*(xhi-xlo), xhi+0.05*(xhi-xlo)
	px := func(x float64) float64 { return padL + (math.Log10(x)-xlo)/(xhi-xlo)*plotW }

	var yticks []float64
	var ylo, yhi float64
	if c.LogY {
		ylo, yhi = math.Floor(math.Log10(ymin)), math.Ceil(math.Log10(ymax))
		if yhi == ylo {
			yhi++
		}
		for e := ylo; e <= yhi; e++ {
			yticks = append(yticks, math.Pow(10, e))
		}
	} else {
		step := niceStep(ymax / 5)
		yhi = math.Ceil(ymax/step) * step
		if yhi <= 0 {
			yhi, step = 1, 0.2
		}
		for v := 0.0; v <= yhi+step/2; v += step {
			yticks = append(yticks, v)
		}
	}
	py := func(y float64) float64 {
		if c.LogY {
			return padT + plotH - (math.Log10(y)-ylo)/(yhi-ylo)*plotH
		}
		return padT + plotH - y/yhi*plotH
	}
	yfmt := c.YFormat
	if yfmt == nil {
		yfmt = SI
	}

	var b bytes.Buffer
	f := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	f(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	f(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans, Arial, sans-serif" font-size="13">`+"\n", chartW, chartH, chartW, chartH)
	f(`<rect x="0" y="0" width="%d" height="%d" fill="white"/>`+"\n", chartW, chartH)
	f(`<text x="%d" y="26" font-size="16" font-weight="bold">%s</text>`+"\n", padL, esc(c.Title))
	// grid and y ticks
	for _, v := range yticks {
		y := py(v)
		f(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", padL, y, padL+plotW, y)
		f(`<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", padL-8, y, esc(yfmt(v)))
	}
	for _, x := range xs {
		xx := px(x)
		f(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>`+"\n", xx, padT, xx, padT+plotH)
		f(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", xx, padT+plotH+20, strconv.FormatFloat(x, 'f', -1, 64))
	}
	// axes
	f(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", padL, padT+plotH, padL+plotW, padT+plotH)
	f(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", padL, padT, padL, padT+plotH)
	f(`<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", padL+plotW/2, chartH-14, esc(c.XLabel))
	f(`<text transform="translate(20,%d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", padT+plotH/2, esc(c.YLabel))
	// series
	for i, s := range c.Series {
		col := palette[i%len(palette)]
		pts := append([]Point(nil), s.Points...)
		sort.Slice(pts, func(a, b int) bool { return pts[a].X < pts[b].X })
		var path bytes.Buffer
		for _, p := range pts {
			if p.X <= 0 || math.IsNaN(p.Y) || math.IsInf(p.Y, 0) || (c.LogY && p.Y <= 0) {
				continue
			}
			if path.Len() > 0 {
				path.WriteByte(' ')
			}
			fmt.Fprintf(&path, "%.1f,%.1f", px(p.X), py(p.Y))
			f(`<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`+"\n", px(p.X), py(p.Y), col)
		}
		if path.Len() > 0 {
			f(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", path.String(), col)
		}
		ly := padT + 10 + i*22
		f(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", legendX, ly, legendX+24, ly, col)
		f(`<text x="%d" y="%d" dominant-baseline="middle">%s</text>`+"\n", legendX+32, ly, esc(s.Name))
	}
	f("</svg>\n")
	return b.Bytes()
}

func esc(s string) string { return html.EscapeString(s) }

// niceStep rounds v up to 1, 2 or 5 times a power of ten.
func niceStep(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// SI formats v with a k or M suffix.
func SI(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// Micros formats nanoseconds as a latency tick.
func Micros(ns float64) string {
	switch {
	case ns >= 1e9:
		return strconv.FormatFloat(ns/1e9, 'f', -1, 64) + " s"
	case ns >= 1e6:
		return strconv.FormatFloat(ns/1e6, 'f', -1, 64) + " ms"
	case ns >= 1e3:
		return strconv.FormatFloat(ns/1e3, 'f', -1, 64) + " µs"
	}
	return strconv.FormatFloat(ns, 'f', -1, 64) + " ns"
}
