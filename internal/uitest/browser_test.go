package uitest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The browser: headless Chromium driven over the DevTools protocol by
// chromedp. Without a Chromium binary the tests skip (go test ./... passes
// on a machine without one); CI installs Debian's chromium (.ci/run).

// Bounds of a browser test.
const (
	// testBound is a whole test's: the browser is killed at its end.
	testBound = 3 * time.Minute
	// awaitBound is how long a condition on the page is awaited: generous
	// for a loaded CI machine; the times actually observed are logged.
	awaitBound = 20 * time.Second
	// pollEvery is the period of the awaits' DOM reads.
	pollEvery = 20 * time.Millisecond
)

// chromiumNames are the names Chromium goes by, in the order looked for.
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"}

// chromium returns the browser's path, or skips the test: DFLOCKD_CHROMIUM
// names one, else the first of chromiumNames on PATH.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DFLOCKD_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range chromiumNames {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	t.Skipf("no Chromium binary (looked for %v on PATH; DFLOCKD_CHROMIUM names one): "+
		"the browser test of /ui is skipped (Debian: apt-get install chromium)", chromiumNames)
	return ""
}

// page is one browser tab.
type page struct {
	t   *testing.T
	ctx context.Context
}

// newPage starts a headless Chromium with one tab of width×height CSS
// pixels, with extra options; the test's end kills it. Its memory is
// bounded by one renderer process, no GPU process, V8's heap capped and
// /dev/shm not used.
func newPage(t *testing.T, width, height int, extra ...chromedp.ExecAllocatorOption) *page {
	t.Helper()
	path := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.DisableGPU,
		chromedp.WindowSize(width, height),
		chromedp.Flag("renderer-process-limit", "1"),
		chromedp.Flag("js-flags", "--max-old-space-size=256"),
		chromedp.Flag("disable-software-rasterizer", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.Flag("lang", "en-US"),
		chromedp.UserDataDir(t.TempDir()),
	)
	opts = append(opts, extra...)
	if os.Geteuid() == 0 {
		// Chromium's sandbox refuses to run as root (CI runs as root).
		opts = append(opts, chromedp.NoSandbox)
	}
	ctx, cancelTime := context.WithTimeout(context.Background(), testBound)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
		cancelTime()
	})
	p := &page{t: t, ctx: bctx}
	p.do(chromedp.EmulateViewport(int64(width), int64(height)))
	return p
}

// do runs actions on the tab, failing the test on an error.
func (p *page) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.t.Fatalf("browser: %v", err)
	}
}

// eval evaluates a JavaScript expression on the page into a T.
func eval[T any](p *page, js string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		p.t.Fatalf("browser: evaluating %s: %v", js, err)
	}
	return v
}

// await reads the page with js until ok accepts what it read, and returns
// that and how long it took; after awaitBound it fails the test with what
// it read last.
func await[T any](p *page, what, js string, ok func(T) bool) (T, time.Duration) {
	p.t.Helper()
	start := time.Now()
	for {
		v := eval[T](p, js)
		if ok(v) {
			return v, time.Since(start)
		}
		if time.Since(start) > awaitBound {
			last, _ := json.Marshal(v)
			p.t.Fatalf("the page did not show %s within %v; it showed: %s", what, awaitBound, last)
		}
		time.Sleep(pollEvery)
	}
}

// screenshot writes the page as NAME.png into $DFLOCKD_UI_SCREENSHOTS,
// when that names a directory.
func (p *page) screenshot(name string) {
	p.t.Helper()
	dir := os.Getenv("DFLOCKD_UI_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot %s.png: %d bytes", name, len(png))
}
