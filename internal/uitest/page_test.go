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

// durationForms are the ways the page writes a duration: "850 ms",
// "12.3 s" below 2 min, "4 min 59 s", "2 h 5 min 0 s".
var durationForms = regexp.MustCompile(`^(?:(\d+) ms|(\d+(?:\.\d)?) s|(?:(\d+) h )?(\d+) min (\d+) s)$`)

// seconds parses a duration as the page writes it; false for any other
// form (a floored "4 min" for 4m59s is one).
func seconds(s string) (float64, bool) {
	m := durationForms.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	n := func(i int) float64 { f, _ := strconv.ParseFloat(m[i], 64); return f }
	switch {
	case m[1] != "":
		return n(1) / 1000, true
	case m[2] != "":
		return n(2), true
	}
	return n(3)*3600 + n(4)*60 + n(5), true
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
	// How long the holder's connection has been up, labelled as such.
	if age := regexp.MustCompile(` connected (.+?) ago`).FindStringSubmatch(row.Holders[0]); age == nil {
		t.Errorf("the holder shows as %q: no connection age (\"connected … ago\")", row.Holders[0])
	} else if _, ok := seconds(age[1]); !ok {
		t.Errorf("the connection's age reads %q", age[1])
	}

	// A lease of 2 min or more, to the second: 299 s is 4 min 59 s
	// (less the time the page takes), not "4 min".
	long := dial(t, s, "long lease")
	backup := long.lock("backup", 0, 299)
	lease, _ := await(p, "backup's lease", rowJS("backup"), func(r *lockRow) bool { return r != nil && r.Lease != "" })
	if left, ok := seconds(lease.Lease); !ok || left > 299 || left <= 120 || !strings.Contains(lease.Lease, " min ") {
		t.Errorf("a lease of 299 s shows as %q, want 4 min and its seconds", lease.Lease)
	}
	long.release("backup", backup)

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
	// Each line names its waiter, then who holds the key it waits for:
	// A waits for k2, which B holds, and B for k1, which A holds.
	lines := eval[[]string](p, `[...document.querySelectorAll("#view .deadlock .claims > li")].map((e) => e.textContent)`)
	if len(lines) != 2 {
		t.Fatalf("the Deadlocks tab has %d lines, want 2: %q", len(lines), lines)
	}
	for _, l := range lines {
		waiter, holder, ok := strings.Cut(l, " held by or queued ahead: ")
		switch {
		case !ok:
			t.Errorf("the line %q names no holder", l)
		case names(waiter, a) && strings.Contains(waiter, "k2") && names(holder, b) && !names(holder, a):
		case names(waiter, b) && strings.Contains(waiter, "k1") && names(holder, a) && !names(holder, b):
		default:
			t.Errorf("the line %q: want A (%s) waiting for k2 held by B (%s), or B for k1 held by A", l, a.local(), b.local())
		}
	}
	noObjectText(t, p)

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

// noObjectText shows each tab in turn and fails on any "[object" in the
// page's text: an element or array put into it as a string.
func noObjectText(t *testing.T, p *page) {
	t.Helper()
	shown := eval[string](p, `(() => { const b = document.querySelector("#tabs button[aria-selected=true]"); return b ? b.firstChild.textContent : ""; })()`)
	titles := eval[[]string](p, `[...document.querySelectorAll("#tabs button")].map((b) => b.firstChild.textContent)`)
	for _, title := range titles {
		p.showTab(title)
		if text := eval[string](p, `document.body.textContent`); strings.Contains(text, "[object") {
			i := strings.Index(text, "[object")
			t.Errorf("the %s tab shows %q", title, text[max(0, i-80):min(len(text), i+40)])
		}
	}
	p.showTab(shown)
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
// the page says so, names the flag that records them, and reloads on its
// own, so a lock taken and released after it loaded still shows and goes.
func TestObservatoryWithoutEvents(t *testing.T) {
	chromium(t)
	s := startServer(t, "--observatory-events", "0")
	p := newPage(t, 1280, 720)
	p.do(chromedp.Navigate(s.url + "/ui"))
	await(p, "the page to say it reloads", `document.getElementById("live").textContent`, eq("reloading every 2 s"))
	c := dial(t, s, "holder")
	tok := c.lock("invoices", 0, 60)
	await(p, "invoices with its holder", rowJS("invoices"), func(r *lockRow) bool { return r != nil && len(r.Holders) == 1 && names(r.Holders[0], c) })
	// Where a time is unknown ("held ?"), the page says why, and which
	// flag gives it.
	notice := eval[string](p, `(() => { const n = document.getElementById("events-off"); return n && !n.hidden ? n.textContent : ""; })()`)
	if !strings.Contains(notice, "--observatory-events") {
		t.Errorf("the page does not say that events are off and which flag records them (notice: %q)", notice)
	}
	unknown := eval[[]string](p, `[...document.querySelectorAll("#view tr[data-key=invoices] td.holders span.muted")].filter((e) => e.textContent === "?").map((e) => e.title)`)
	if len(unknown) == 0 || !strings.Contains(unknown[0], "--observatory-events") {
		t.Errorf("the unknown hold time's title is %q, want it to name --observatory-events", unknown)
	}
	p.showTab("Timeline")
	if v := eval[string](p, `document.getElementById("view").textContent`); !strings.Contains(v, "--observatory-events N") {
		t.Errorf("the empty timeline reads %q", v)
	}
	p.showTab("Locks")
	c.release("invoices", tok)
	await(p, "invoices gone after its release", rowJS("invoices"), func(r *lockRow) bool { return r == nil })
}
