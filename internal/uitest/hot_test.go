package uitest

import (
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
)

// The "Hot keys and latency" panel names each key's kind: a lock "x" and a
// semaphore "x" are two resources, two rows with their own counts.
func TestHotPanelKinds(t *testing.T) {
	chromium(t)
	s := startServer(t)
	c := dial(t, s, "worker")
	for range 2 {
		c.release("x", c.lock("x", 0, 60))
	}
	for range 3 {
		c.send("sl", "x", "0 3 60")
		tok := c.granted("x")
		c.send("sr", "x", tok)
		if r := c.reply(); r != "ok" {
			t.Fatalf("sr x: %q", r)
		}
	}
	p := newPage(t, 1280, 720)
	p.do(chromedp.Navigate(s.url + "/ui"))
	p.do(chromedp.Click(chromedp.CSS(`#hot > summary`)))
	// The "Most granted" table's rows: key, kind, count.
	rows := `[...document.querySelectorAll("#hot-body table.hot-table")].filter((t) => t.caption.textContent === "Most granted")
  .flatMap((t) => [...t.querySelectorAll("tbody tr")].map((r) => [...r.cells].map((c) => c.textContent).join("|")))`
	want := []string{"x|semaphore|3", "x|lock|2"}
	await(p, "the hot panel's rows by grants", rows, func(got []string) bool { return slices.Equal(got, want) })
}
