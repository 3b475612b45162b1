package uitest

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dflockd-ng/dflockd/internal/testserver"
)

// What a user of /ui sees, read from the page's DOM while clients work
// over TCP (issue #22, acceptance 1): every check awaits its condition
// with a bound and says what the page showed when it times out.

// lockRow is a row of the locks table as the page shows it.
type lockRow struct {
	Holders    []string `json:"holders"` // each holder's text, in order
	Waiters    []string `json:"waiters"` // each waiter's text, in queue order
	Lease      string   `json:"lease"`   // the first holder's lease countdown
	Deadlocked bool     `json:"deadlocked"`
}

// rowJS reads the row of key in the tab shown, null when there is none.
func rowJS(key string) string {
	k, _ := json.Marshal(key)
	return `((key) => {
  const r = [...document.querySelectorAll("#view tbody tr")].find((e) => e.dataset.key === key);
  if (!r) return null;
  const items = (cell) => [...r.querySelectorAll("td." + cell + " .claims > li")].map((li) => li.textContent);
  const lease = r.querySelector("td.holders .lease");
  return { holders: items("holders"), waiters: items("queue"), lease: lease ? lease.textContent : "",
    deadlocked: r.classList.contains("deadlocked") };
})(` + string(k) + `)`
}

// tabJS shows the tab whose title starts with title.
func tabJS(title string) string {
	q, _ := json.Marshal(title)
	return `(() => { const b = [...document.querySelectorAll("#tabs button")].find((e) => e.textContent.startsWith(` +
		string(q) + `)); if (b) b.click(); return Boolean(b); })()`
}

func (p *page) showTab(title string) {
	p.t.Helper()
	if !eval[bool](p, tabJS(title)) {
		p.t.Fatalf("the page has no tab %q", title)
	}
}

// names says whether a text from the page names the client by its
// address (the port not followed by another digit).
func names(text string, c *client) bool {
	return regexp.MustCompile(regexp.QuoteMeta(c.local()) + `(\D|$)`).MatchString(text)
}

// seconds parses a duration as the page writes it ("850 ms", "12.3 s").
func seconds(s string) (float64, bool) {
	if v, ok := strings.CutSuffix(s, " ms"); ok {
		f, err := strconv.ParseFloat(v, 64)
		return f / 1000, err == nil
	}
	if v, ok := strings.CutSuffix(s, " s"); ok {
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil
	}
	return 0, false
}

func eq[T comparable](want T) func(T) bool { return func(v T) bool { return v == want } }

func TestObservatoryPage(t *testing.T) {
	chromium(t) // skips before the build when there is none
	s := startServer(t)
	p := newPage(t, 1280, 720)
	p.do(chromedp.Navigate(s.url + "/ui"))
	await(p, "its event stream live", `document.getElementById("live").textContent`, eq("live"))

	// A lock taken over TCP appears with its holder.
	holder, w1, w2 := dial(t, s, "holder"), dial(t, s, "waiter 1"), dial(t, s, "waiter 2")
	orders := holder.lock("orders", 0, 60)
	grantedAt := time.Now()
	row, _ := await(p, "orders held by the holder", rowJS("orders"), func(r *lockRow) bool {
		return r != nil && len(r.Holders) == 1 && names(r.Holders[0], holder)
	})
	t.Logf("the lock taken over TCP showed on the page %v after its grant (issue: within 1 s)", time.Since(grantedAt).Round(time.Millisecond))
	if !strings.Contains(row.Holders[0], "tcp") {
		t.Errorf("the holder shows as %q: no transport tcp", row.Holders[0])
	}

	// Two waiters queue behind it, in the order they came.
	w1.send("l", "orders", "60 60")
	await(p, "waiter 1 queued behind the holder", rowJS("orders"), func(r *lockRow) bool {
		return r != nil && len(r.Waiters) == 1 && names(r.Waiters[0], w1)
	})
	w2.send("l", "orders", "60 60")
	queuedAt := time.Now()
	row, _ = await(p, "waiters 1 and 2 queued in that order", rowJS("orders"), func(r *lockRow) bool {
		return r != nil && len(r.Waiters) == 2 && names(r.Waiters[0], w1) && names(r.Waiters[1], w2)
	})
	t.Logf("the second waiter showed %v after its request", time.Since(queuedAt).Round(time.Millisecond))

	// The lease counts down.
	first, ok := seconds(row.Lease)
	if !ok || first <= 1 || first > 60 {
		t.Fatalf("the holder's lease shows %q, want at most 60 s", row.Lease)
	}
	await(p, "the lease countdown falling", rowJS("orders"), func(r *lockRow) bool {
		left, ok := seconds(r.Lease)
		return ok && left <= first-1
	})

	// A lease that runs out: the timeline names the holder that lost it.
	lapsed := dial(t, s, "lapsed holder")
	lapsed.lock("nightly-report", 0, 2)
	p.showTab("Timeline")
	expiry, _ := await(p, "the expiry of nightly-report on the timeline", `[...document.querySelectorAll("#view tr[data-event=expire]")]
		.filter((r) => r.dataset.key === "nightly-report").map((r) => r.textContent)`, func(rows []string) bool { return len(rows) > 0 })
	if len(expiry) != 1 || !names(expiry[0], lapsed) || !strings.Contains(expiry[0], "lost by") {
		t.Errorf("the timeline's expiry of nightly-report: %q; want one, lost by %s", expiry, lapsed.local())
	}
	if names(expiry[0], holder) || names(expiry[0], w1) {
		t.Errorf("the expiry %q names another client", expiry[0])
	}
	p.showTab("Locks")
	await(p, "nightly-report gone from the locks", rowJS("nightly-report"), func(r *lockRow) bool { return r == nil })
	p.showTab("Timeline")
	// The key's own timeline (its detail, opened from the timeline) too.
	p.do(chromedp.Click(chromedp.CSS(`#view tr[data-event=expire][data-key="nightly-report"] .key`)))
	await(p, "nightly-report's detail with its expiry", `[...document.querySelectorAll("#detail tr[data-event=expire]")].map((r) => r.textContent)`,
		func(rows []string) bool {
			return len(rows) == 1 && names(rows[0], lapsed) && strings.Contains(rows[0], "lost by")
		})

	// Two sessions that deadlock are highlighted.
	p.showTab("Locks")
	a, b := dial(t, s, "session A"), dial(t, s, "session B")
	a.lock("k1", 0, 60)
	b.lock("k2", 0, 60)
	a.send("l", "k2", "60 60")
	b.send("l", "k1", "60 60")
	closedAt := time.Now()
	for _, k := range []string{"k1", "k2"} {
		await(p, k+" highlighted as deadlocked", rowJS(k), func(r *lockRow) bool { return r != nil && r.Deadlocked })
	}
	t.Logf("the deadlock showed %v after it closed (the server searches at most once a second)", time.Since(closedAt).Round(time.Millisecond))
	if r := eval[*lockRow](p, rowJS("orders")); r == nil || r.Deadlocked {
		t.Errorf("orders, in no deadlock, shows as %+v", r)
	}
	tab, _ := await(p, "the Deadlocks tab marked", `(() => { const b = [...document.querySelectorAll("#tabs button")]
		.find((e) => e.textContent.startsWith("Deadlocks")); return b.className + " " + b.textContent; })()`,
		func(s string) bool { return strings.HasPrefix(s, "hot ") })
	if !strings.HasSuffix(tab, "Deadlocks1") {
		t.Errorf("the Deadlocks tab reads %q, want one deadlock", tab)
	}
	fits(t, p, "Locks", 1280)
	p.screenshot("observatory-desktop")

	p.showTab("Deadlocks")
	cycle := eval[string](p, `[...document.querySelectorAll("#view .deadlock")].map((e) => e.textContent).join("\n")`)
	if !names(cycle, a) || !names(cycle, b) || !strings.Contains(cycle, "k1") || !strings.Contains(cycle, "k2") {
		t.Errorf("the Deadlocks tab shows %q; want sessions %s and %s on k1 and k2", cycle, a.local(), b.local())
	}

	// Phone width: the tables fit the screen.
	p.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)))
	for _, title := range []string{"Deadlocks", "Timeline", "Locks"} {
		p.showTab(title)
		fits(t, p, title, 390)
	}
	p.screenshot("observatory-phone")
	p.do(chromedp.EmulateViewport(1280, 720))

	// Releases hand the key down the queue in order; then it vanishes.
	holder.release("orders", orders)
	t1 := w1.granted("orders")
	await(p, "waiter 1 holding orders, waiter 2 queued", rowJS("orders"), func(r *lockRow) bool {
		return r != nil && len(r.Holders) == 1 && names(r.Holders[0], w1) && len(r.Waiters) == 1 && names(r.Waiters[0], w2)
	})
	w1.release("orders", t1)
	t2 := w2.granted("orders")
	w2.release("orders", t2)
	releasedAt := time.Now()
	await(p, "orders gone after its last release", rowJS("orders"), func(r *lockRow) bool { return r == nil })
	t.Logf("orders vanished %v after its release", time.Since(releasedAt).Round(time.Millisecond))

	// A deadlock ends when one of its sessions goes: A's disconnect
	// frees k1 for B. No one waits any more, and the server answers its
	// last search for a second (a scrape has just asked, as one may):
	// the page must ask again after that second.
	if n := s.deadlocks(t); n != 1 {
		t.Fatalf("GET /v1/deadlocks: %d deadlocks, want 1", n)
	}
	a.c.Close()
	b.granted("k1")
	freedAt := time.Now()
	for _, k := range []string{"k1", "k2"} {
		await(p, k+" held by B alone, no longer deadlocked", rowJS(k), func(r *lockRow) bool {
			return r != nil && !r.Deadlocked && len(r.Holders) == 1 && names(r.Holders[0], b) && len(r.Waiters) == 0
		})
	}
	t.Logf("the deadlock's highlight went %v after it ended", time.Since(freedAt).Round(time.Millisecond))
}

// overflowJS lists what sticks out sideways: the document, the view's
// scroll box, and any table wider than the screen.
const overflowJS = `(() => {
  const vw = document.documentElement.clientWidth, out = [];
  if (document.documentElement.scrollWidth > vw) out.push("document " + document.documentElement.scrollWidth + " px wide");
  const v = document.getElementById("view");
  if (v.scrollWidth > v.clientWidth) out.push("#view scrolls: " + v.scrollWidth + " px in " + v.clientWidth);
  const d = document.getElementById("detail");
  if (!d.hidden && d.scrollWidth > d.clientWidth) out.push("#detail scrolls: " + d.scrollWidth + " px in " + d.clientWidth);
  for (const tb of document.querySelectorAll("#view table, #detail table")) {
    const r = tb.getBoundingClientRect();
    if (r.left < 0 || r.right > vw) out.push(tb.className + " table spans " + Math.round(r.left) + ".." + Math.round(r.right));
  }
  return { width: vw, tables: document.querySelectorAll("#view table").length, over: out };
})()`

// fits awaits a layout of the tab, on a screen width CSS pixels wide, in
// which nothing sticks out sideways.
func fits(t *testing.T, p *page, tab string, width int) {
	t.Helper()
	type layout struct {
		Width  int      `json:"width"`
		Tables int      `json:"tables"`
		Over   []string `json:"over"`
	}
	l, _ := await(p, fmt.Sprintf("the %s tab within %d px", tab, width), overflowJS, func(l layout) bool {
		return l.Width <= width && len(l.Over) == 0
	})
	t.Logf("%s tab, %d CSS px wide: %d table(s), nothing overflows sideways", tab, l.Width, l.Tables)
}

// With --auth-token the page asks for the token and shows nothing until
// it has the right one; then it keeps it for the tab's life.
func TestObservatoryAuthToken(t *testing.T) {
	const token = "observatory-secret"
	chromium(t)
	s := startServer(t, "--auth-token", token)
	c := dial(t, s, "holder")
	c.send("auth", "_", token)
	if r := c.reply(); r != "ok" {
		t.Fatalf("auth: %q", r)
	}
	c.lock("payroll", 0, 60)

	p := newPage(t, 1280, 720)
	p.do(chromedp.Navigate(s.url + "/ui"))
	loginShown := `!document.getElementById("login").hidden`
	await(p, "the token asked for", loginShown, eq(true))
	shown := func() string {
		return eval[string](p, `document.getElementById("view").textContent + "|" + document.getElementById("tabs").textContent`)
	}
	if v := shown(); v != "|" || strings.Contains(eval[string](p, `document.body.textContent`), "payroll") {
		t.Errorf("without the token the page shows %q", v)
	}

	// A wrong token is refused, and still nothing shows.
	p.do(chromedp.SendKeys(chromedp.ID("token"), "wrong-token"), chromedp.Click(chromedp.CSS(`#login button[type=submit]`)))
	await(p, "the wrong token refused", `document.getElementById("login").hidden ? "" : document.getElementById("login-error").textContent`,
		eq("The token was refused."))
	if v := shown(); v != "|" {
		t.Errorf("with a wrong token the page shows %q", v)
	}

	eval[string](p, `document.getElementById("token").value = ""`)
	p.do(chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Click(chromedp.CSS(`#login button[type=submit]`)))
	await(p, "payroll with its holder", rowJS("payroll"), func(r *lockRow) bool { return r != nil && len(r.Holders) == 1 && names(r.Holders[0], c) })
	await(p, "the event stream live", `document.getElementById("live").textContent`, eq("live"))

	// Asked once: a reload of the tab does not ask again.
	p.do(chromedp.Reload())
	await(p, "payroll after a reload", rowJS("payroll"), func(r *lockRow) bool { return r != nil })
	if eval[bool](p, loginShown) {
		t.Error("the page asked for the token again after a reload")
	}
}

// Over TLS (--tls-cert serves HTTPS too): the page, its event stream and
// a lock taken over TLS. The browser trusts exactly the test certificate's
// key (its SPKI hash), not any certificate.
func TestObservatoryOverTLS(t *testing.T) {
	chromium(t)
	cert := testserver.NewCert(t)
	s := startServerTLS(t, &cert)
	leaf, err := x509.ParseCertificate(cert.TLS.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	spki := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	p := newPage(t, 1280, 720, chromedp.Flag("ignore-certificate-errors-spki-list", base64.StdEncoding.EncodeToString(spki[:])))
	p.do(chromedp.Navigate(s.url + "/ui"))
	await(p, "its event stream live", `document.getElementById("live").textContent`, eq("live"))
	if proto := eval[string](p, `location.protocol`); proto != "https:" {
		t.Fatalf("the page is served over %s", proto)
	}
	c := dial(t, s, "TLS holder")
	c.lock("ledger", 0, 60)
	row, _ := await(p, "ledger held by the TLS client", rowJS("ledger"), func(r *lockRow) bool {
		return r != nil && len(r.Holders) == 1 && names(r.Holders[0], c)
	})
	if !strings.Contains(row.Holders[0], " tls ") {
		t.Errorf("the holder shows as %q: no transport tls", row.Holders[0])
	}
}

// With --observatory-events 0 (the default) there are no events to push:
// the page says so and reloads on its own, so a lock taken and released
// after it loaded still shows and goes.
func TestObservatoryWithoutEvents(t *testing.T) {
	chromium(t)
	s := startServer(t, "--observatory-events", "0")
	p := newPage(t, 1280, 720)
	p.do(chromedp.Navigate(s.url + "/ui"))
	await(p, "the page to say it reloads", `document.getElementById("live").textContent`, eq("reloading every 2 s"))
	c := dial(t, s, "holder")
	tok := c.lock("invoices", 0, 60)
	await(p, "invoices with its holder", rowJS("invoices"), func(r *lockRow) bool { return r != nil && len(r.Holders) == 1 && names(r.Holders[0], c) })
	c.release("invoices", tok)
	await(p, "invoices gone after its release", rowJS("invoices"), func(r *lockRow) bool { return r == nil })
}
