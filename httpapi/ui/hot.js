"use strict";
// The page's "Hot keys and latency" panel: GET /v1/hotkeys (top keys by
// grants and by total wait, from bounded sketches; the wait and hold
// histograms of /metrics), drawn as tables and SVG bars. It asks only
// while the panel is open, every HOT_MS, so a closed panel costs the
// server nothing. It uses the token app.js keeps for the tab, and puts
// every server string in as text.
(() => {
  const TOKEN = "dflockd-observatory-token"; // app.js's sessionStorage key
  const HOT_MS = 2000;
  const LIMIT = 10;
  const SVG = "http://www.w3.org/2000/svg";
  const panel = document.getElementById("hot");
  const body = document.getElementById("hot-body");
  if (!panel || !body) return;
  let timer = null;

  function el(tag, cls, ...kids) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    for (const c of kids) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
    return e;
  }

  function ms(v) {
    if (v < 1000) return v + " ms";
    if (v < 120000) return Math.round(v / 100) / 10 + " s";
    return Math.round(v / 6000) / 10 + " min";
  }

  // A key's count with its sketch error: "12" or "12 (±3)".
  function bounded(count, err, fmt) {
    return err ? fmt(count) + " (≤" + fmt(err) + " over)" : fmt(count);
  }

  function keyTable(title, rows, fmt, unit) {
    const t = el("table", "hot-table");
    t.append(el("caption", null, title));
    // A lock and a semaphore of one name are two rows: the kind tells them apart.
    const head = el("tr", null, el("th", null, "Key"), el("th", null, "Kind"), el("th", "num", unit));
    t.append(el("thead", null, head));
    const tb = el("tbody");
    if (!rows.length) tb.append(el("tr", null, el("td", "muted", "none yet"), el("td"), el("td")));
    for (const r of rows) tb.append(el("tr", null, el("td", "key-text", r.key), el("td", "kind", r.kind), el("td", "num", bounded(r.count, r.error, fmt))));
    t.append(tb);
    return t;
  }

  // A histogram as bars, one per bucket, labelled by upper bound.
  function histogram(title, hist, bounds) {
    const fig = el("figure", "hist");
    const mean = hist.count ? ms(Math.round(hist.sum_ms / hist.count)) : "-";
    fig.append(el("figcaption", null, title + ": " + hist.count + " observed, mean " + mean));
    const n = hist.counts.length, W = 320, H = 90, bw = W / n;
    const top = Math.max(1, ...hist.counts);
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("viewBox", "0 0 " + W + " " + (H + 14));
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", title + " histogram");
    hist.counts.forEach((c, i) => {
      const bh = c ? Math.max(1, Math.round((H * c) / top)) : 0;
      const r = document.createElementNS(SVG, "rect");
      r.setAttribute("x", String(i * bw + 1));
      r.setAttribute("y", String(H - bh));
      r.setAttribute("width", String(bw - 2));
      r.setAttribute("height", String(bh));
      r.setAttribute("class", "bar");
      const tip = document.createElementNS(SVG, "title");
      tip.textContent = (i < bounds.length ? "≤ " + ms(bounds[i]) : "> " + ms(bounds[bounds.length - 1])) + ": " + c;
      r.append(tip);
      svg.append(r);
      if (i % 3 === 0 && i < bounds.length) {
        const tx = document.createElementNS(SVG, "text");
        tx.setAttribute("x", String(i * bw + 1));
        tx.setAttribute("y", String(H + 12));
        tx.setAttribute("class", "axis");
        tx.textContent = ms(bounds[i]);
        svg.append(tx);
      }
    });
    fig.append(svg);
    return fig;
  }

  async function load() {
    timer = null;
    if (!panel.open) return;
    const token = sessionStorage.getItem(TOKEN) || "";
    try {
      const res = await fetch("/v1/hotkeys?limit=" + LIMIT, { headers: token ? { Authorization: "Bearer " + token } : {}, cache: "no-store" });
      if (!res.ok) throw new Error("HTTP " + res.status);
      const d = await res.json();
      const kids = [];
      if (!d.events) kids.push(el("p", "muted", "Hot keys are counted while the server records events (--observatory-events)."));
      kids.push(el("div", "hot-grid",
        keyTable("Most granted", d.by_grants, String, "Grants"),
        keyTable("Most waited for", d.by_wait, ms, "Total wait"),
        histogram("Wait (acquire to grant or timeout)", d.latency.wait, d.latency.bounds_ms),
        histogram("Hold (grant to release, expiry or disconnect)", d.latency.hold, d.latency.bounds_ms)));
      body.replaceChildren(...kids);
    } catch (e) {
      body.replaceChildren(el("p", "error", "Hot keys: " + e.message));
    }
    if (panel.open) timer = setTimeout(load, HOT_MS);
  }

  panel.addEventListener("toggle", () => { if (panel.open && !timer) load(); });
  if (panel.open) load();
})();
