"use strict";
// The observatory page: tables from GET /v1/keys and /v1/deadlocks,
// refreshed when GET /v1/events (read with fetch, so that it can carry
// the bearer token an EventSource cannot) says something changed. Every
// string from the server goes into the page as text, never as markup.
(() => {
  const TOKEN = "dflockd-observatory-token";
  const MAX_KEYS = 5000;     // keys loaded for the tables, in pages of 1000
  const MAX_EVENTS = 500;    // the timeline's length
  const REFRESH_MS = 500;    // at most two reloads of the tables a second
  // The server searches for deadlocks at most once a second and answers
  // its last result in between (httpapi/deadlocks.go): a reload that came
  // within that second of the events that closed a cycle is asked again
  // once this long after it, else the cycle shows only at the next event.
  const DEADLOCK_RECHECK_MS = 1100;
  // With --observatory-events 0 the server records no events to push
  // (GET /v1/events answers 404): the tables are then reloaded this often.
  const POLL_MS = 2000;
  // What the page says when the server records no events: which flag
  // gives them.
  const EVENTS_OFF = "The server records no lock events: start dflockd with --observatory-events N (4096: about 2 MiB) " +
    "for grant and wait times, the timeline and hot keys.";

  const isElection = (k) => k.observers > 0 || k.holders.some((h) => h.elect);
  // A lock nobody holds or waits for stays in the server until its idle
  // GC: the claim tabs leave it out (a released key leaves the table).
  const claimed = (k) => k.holders_total > 0 || k.waiters_total > 0 || k.observers > 0;
  const TABS = [
    { id: "locks", title: "Locks", pick: (k) => claimed(k) && ((k.kind === "lock" && !isElection(k)) || k.kind === "rwlock"), render: locksTable },
    { id: "semaphores", title: "Semaphores", pick: (k) => claimed(k) && k.kind === "semaphore", render: locksTable },
    { id: "elections", title: "Elections", pick: (k) => claimed(k) && k.kind === "lock" && isElection(k), render: locksTable },
    { id: "counters", title: "Counters", pick: (k) => k.kind === "counter", render: simpleTable(["Value", (k) => k.value]) },
    { id: "kv", title: "KV", pick: (k) => k.kind === "kv", render: simpleTable(["Bytes", (k) => k.value_len], ["TTL", (k) => (k.ttl_ms === undefined ? "none" : secs(k.ttl_ms))]) },
    { id: "lists", title: "Lists", pick: (k) => k.kind === "list", render: simpleTable(["Length", (k) => k.len], ["Pop waiters", (k) => waiters(k)]) },
    { id: "barriers", title: "Barriers", pick: (k) => k.kind === "barrier", render: simpleTable(["Count", (k) => k.count], ["Arrived", (k) => waiters(k)]) },
    { id: "deadlocks", title: "Deadlocks", render: deadlocksView },
    { id: "timeline", title: "Timeline", render: timelineView },
  ];

  const state = { token: sessionStorage.getItem(TOKEN) || "", tab: "locks", keys: [], truncated: false,
    deadlocks: [], events: [], lastId: "", prefix: "", stream: null, pending: null, detail: null, eventsOn: true, poll: null,
    lastRefresh: -Infinity, changed: false };
  const $ = (id) => document.getElementById(id);

  // h builds an element; strings become text nodes, and arrays of kids
  // are flattened at any depth (a list of "a, b" pairs is two deep).
  function h(tag, props, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const c of kids.flat(Infinity)) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
    return e;
  }

  // clock is a time of day, 24-hour, with seconds: short enough for a
  // phone's column.
  function clock(t) { return new Date(t).toLocaleTimeString([], { hour12: false }); }

  // secs writes a duration to a tenth of a second below 2 min, else to
  // the second: "4 min 59 s", never "4 min" for 4m59s.
  function secs(ms) {
    if (ms < 1000) return ms + " ms";
    if (ms < 120000) return Math.round(ms / 100) / 10 + " s";
    const t = Math.round(ms / 1000), m = Math.floor(t / 60) % 60, hr = Math.floor(t / 3600);
    return (hr ? hr + " h " : "") + m + " min " + (t % 60) + " s";
  }

  // A live duration: counts down (lease, timeout) or up (held, waited)
  // from the value the server gave when the tables loaded.
  function live(ms, down, cls) {
    if (ms === undefined) return h("span", { class: "muted", title: state.eventsOn ? "not known: granted before the server recorded it" : EVENTS_OFF }, "?");
    return h("span", { class: "tick " + (cls || ""), "data-ms": ms, "data-dir": down ? "-1" : "1", "data-at": performance.now() }, secs(ms));
  }

  function who(c) {
    const parts = ["#" + c.conn_id];
    if (c.transport) parts.push(c.transport);
    if (c.remote_addr) parts.push(c.remote_addr);
    const e = h("span", { class: "who", title: "session " + c.session_id }, parts.join(" "));
    if (!c.open) e.append(h("span", { class: "muted" }, " (closed)"));
    else if (c.connected_ms !== undefined) e.append(h("span", { class: "muted wide" }, " connected ", live(c.connected_ms, false), " ago"));
    return e;
  }

  function auth() { return state.token ? { Authorization: "Bearer " + state.token } : {}; }

  async function api(path) {
    const res = await fetch(path, { headers: auth(), cache: "no-store" });
    if (res.status === 401) { login(); throw new Error("unauthorized"); }
    if (!res.ok) throw new Error(path + ": " + res.status);
    return res.json();
  }

  function login(msg) {
    $("login").hidden = false;
    $("login-error").textContent = msg || (state.token ? "The token was refused." : "");
    $("token").focus();
  }

  async function loadKeys() {
    let keys = [], cursor = "";
    do {
      const q = new URLSearchParams({ prefix: state.prefix, limit: "1000" });
      if (cursor) q.set("cursor", cursor);
      const page = await api("/v1/keys?" + q);
      keys = keys.concat(page.keys);
      state.eventsOn = page.events;
      $("events-off").hidden = state.eventsOn;
      cursor = page.next_cursor || "";
    } while (cursor && keys.length < MAX_KEYS);
    state.keys = keys;
    state.truncated = Boolean(cursor);
  }

  async function refresh() {
    state.pending = null;
    state.lastRefresh = performance.now();
    const changed = state.changed;
    state.changed = false;
    try {
      const [, dl] = await Promise.all([loadKeys(), api("/v1/deadlocks")]);
      state.deadlocks = dl.deadlocks;
      // (Only a wait can start a deadlock; one shown may have ended.)
      if (changed && (state.deadlocks.length || state.keys.some((k) => k.waiters_total > 0))) setTimeout(scheduleRefresh, DEADLOCK_RECHECK_MS);
      $("status").textContent = "Loaded " + clock(Date.now()) + (state.truncated ? " (first " + MAX_KEYS + " keys; narrow the prefix)" : "");
      render();
      if (state.detail) showKey(state.detail);
    } catch (e) {
      if (e.message !== "unauthorized") $("status").textContent = String(e);
    }
  }

  // A change shows at once when the tables were not reloaded in the last
  // REFRESH_MS, else at the end of it: a busy server costs at most two
  // reloads a second, a quiet one shows each change as it comes.
  function scheduleRefresh() {
    if (state.pending) return;
    state.pending = setTimeout(refresh, Math.max(0, state.lastRefresh + REFRESH_MS - performance.now()));
  }

  // The event stream, parsed by hand: fetch can send the token.
  async function stream() {
    const ctl = new AbortController();
    state.stream = ctl;
    try {
      const headers = auth();
      if (state.lastId) headers["Last-Event-ID"] = state.lastId;
      const res = await fetch("/v1/events?" + new URLSearchParams({ prefix: state.prefix }), { headers, signal: ctl.signal, cache: "no-store" });
      if (res.status === 401) { login(); return; }
      if (res.status === 404) { noEvents(); return; }
      if (!res.ok) throw new Error(String(res.status));
      setLive("live");
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i, got = false;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          got = frame(buf.slice(0, i)) || got;
          buf = buf.slice(i + 2);
        }
        // One render for what came together (a new reader's history).
        if (got && state.tab === "timeline") render();
      }
    } catch (e) {
      if (ctl.signal.aborted) return;
    }
    if (state.stream !== ctl) return;
    setLive("offline");
    setTimeout(() => { if (state.stream === ctl) stream(); }, 2000);
  }

  // frame takes one event of the stream; true if it was a lock event.
  function frame(text) {
    let id = "", event = "message", data = "";
    for (const line of text.split("\n")) {
      if (line.startsWith(":")) continue;
      const j = line.indexOf(":");
      const field = j < 0 ? line : line.slice(0, j);
      let v = j < 0 ? "" : line.slice(j + 1);
      if (v.startsWith(" ")) v = v.slice(1);
      if (field === "id") id = v;
      else if (field === "event") event = v;
      else if (field === "data") data += (data ? "\n" : "") + v;
    }
    if (id) state.lastId = id;
    if (event === "lock") {
      state.events.unshift(JSON.parse(data));
      state.events.length = Math.min(state.events.length, MAX_EVENTS);
      state.changed = true;
      scheduleRefresh();
      return true;
    }
    if (event === "reset") scheduleRefresh();
    return false;
  }

  // noEvents falls back to reloading every POLL_MS: the page stays current
  // on a server that records no events, at one reload per POLL_MS.
  function noEvents() {
    state.eventsOn = false;
    $("events-off").hidden = false;
    setLive("reloading every " + POLL_MS / 1000 + " s");
    if (!state.poll) state.poll = setInterval(scheduleRefresh, POLL_MS);
  }

  function setLive(what) {
    const b = $("live");
    b.textContent = what;
    b.className = "badge " + (what === "live" ? "on" : "off");
  }

  function restartStream() {
    if (state.poll) clearInterval(state.poll);
    state.poll = null;
    if (state.stream) state.stream.abort();
    state.stream = null;
    state.lastId = "";
    state.events = [];
    stream();
  }

  function waiters(k) {
    if (!k.waiters.length) return h("span", { class: "muted" }, "none");
    const ul = h("ul", { class: "claims" }, k.waiters.map((w) => h("li", {}, who(w.client), w.writer ? " (write)" : "",
      w.blocked ? "" : h("span", { class: "muted" }, " enqueued"), " waiting ", live(w.waited_ms, false),
      w.timeout_remaining_ms !== undefined ? h("span", { class: "muted wide" }, " timeout in ", live(w.timeout_remaining_ms, true)) : "")));
    if (k.waiters_total > k.waiters.length) ul.append(h("li", { class: "muted" }, "… " + (k.waiters_total - k.waiters.length) + " more"));
    return ul;
  }

  function holders(k) {
    if (!k.holders.length) return h("span", { class: "muted" }, "free");
    const ul = h("ul", { class: "claims" }, k.holders.map((x) => h("li", {}, who(x.client),
      x.writer ? " (write)" : "", x.elect ? " leader" : "", x.pending ? h("span", { class: "muted" }, " granted, not yet waited") : "",
      h("br"), "lease ", live(x.lease_remaining_ms, true, "lease" + (x.lease_remaining_ms < 5000 ? " hot" : "")),
      " · held ", live(x.held_ms, false), h("span", { class: "muted wide" }, " · fence " + x.fence),
      x.renewals !== undefined ? h("span", { class: "muted wide" }, " · " + x.renewals + " renewals") : "")));
    if (k.holders_total > k.holders.length) ul.append(h("li", { class: "muted" }, "… " + (k.holders_total - k.holders.length) + " more"));
    return ul;
  }

  function keyCell(k) {
    return h("td", { class: "keycell" }, h("span", { class: "key", tabindex: "0", role: "button", onclick: () => showKey(k.key) }, k.key),
      k.kind === "rwlock" ? h("span", { class: "muted" }, " rw") : "", k.limit > 1 ? h("span", { class: "muted" }, " ×" + k.limit) : "",
      inDeadlock(k) ? h("span", { class: "badge dead", title: "in a deadlock: see the Deadlocks tab" }, "deadlock") : "");
  }

  // inDeadlock: the key is one of a deadlock's (its row is highlighted).
  function inDeadlock(k) {
    return state.deadlocks.some((d) => d.keys.some((x) => x.key === k.key && x.kind === k.kind));
  }

  // A row of a key: data-key and data-kind name it for scripts and tests.
  function keyRow(k, ...cells) {
    return h("tr", { "data-key": k.key, "data-kind": k.kind, class: inDeadlock(k) ? "deadlocked" : "" }, keyCell(k), ...cells);
  }

  function locksTable(keys) {
    return h("table", { class: "locks" }, h("thead", {}, h("tr", {}, h("th", {}, "Key"), h("th", {}, "Held by"), h("th", {}, "Queue"))),
      h("tbody", {}, keys.map((k) => keyRow(k, h("td", { class: "holders" }, holders(k)),
        h("td", { class: "queue" }, h("span", { class: k.waiters_total ? "hot" : "muted" }, String(k.waiters_total)), " ", waiters(k))))));
  }

  function simpleTable(...cols) {
    return (keys) => h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Key"), cols.map(([t]) => h("th", {}, t)), h("th", { class: "wide" }, "Idle"))),
      h("tbody", {}, keys.map((k) => keyRow(k, cols.map(([, f]) => h("td", {}, f(k))), h("td", { class: "wide" }, live(k.idle_ms, false))))));
  }

  function deadlocksView() {
    if (!state.deadlocks.length) return h("p", { class: "muted" }, "No deadlock among the waiters.");
    return state.deadlocks.map((d) => h("div", { class: "deadlock" },
      h("p", { class: "hot" }, "Deadlock since " + clock(d.since) + ": " + d.sessions.length + " sessions, " + d.keys.length + " keys"),
      h("ul", { class: "claims" }, d.waits.map((w) => h("li", {}, who(clientOf(d, w.session_id)), " waits for " + w.kind + " ",
        h("span", { class: "key", onclick: () => showKey(w.key) }, w.key), " held by or queued ahead: ",
        w.on.map((s, i) => [i ? ", " : "", who(clientOf(d, s))])))),
      d.behind.length ? h("p", { class: "muted" }, "Stuck behind it: ", d.behind.map((c, i) => [i ? ", " : "", who(c)])) : ""));
  }

  function clientOf(d, id) {
    return d.sessions.find((c) => c.session_id === id) || { session_id: id, conn_id: "?", open: true };
  }

  function eventsTable(events) {
    if (!events.length) return h("p", { class: "muted" }, state.eventsOn ? "No events yet." : EVENTS_OFF);
    return h("table", { class: "events" }, h("thead", {}, h("tr", {}, h("th", {}, "Time"), h("th", {}, "Event"), h("th", { class: "keycol" }, "Key"), h("th", {}, "Client"), h("th", { class: "wide" }, "Fence"))),
      h("tbody", {}, events.map((e) => h("tr", { "data-key": e.key, "data-event": e.kind }, h("td", { class: "time" }, clock(e.at)),
        h("td", { class: "ev-" + e.kind }, EVENT_LABELS[e.kind] || e.kind.replace("_", " "), e.note ? h("div", { class: "muted" }, e.note) : ""),
        h("td", { class: "keycol" }, h("span", { class: "key", onclick: () => showKey(e.key) }, e.key)), h("td", { class: "client" }, e.kind === "expire" ? h("span", { class: "hot" }, "lost by ") : "", who(e.client)),
        h("td", { class: "wide muted" }, e.fence || "")))));
  }

  // What the timeline says of an event; its Client column is whose claim
  // it was: for an expiry, the holder whose lease ran out.
  const EVENT_LABELS = { expire: "lease expired", force_release: "force release", timeout: "wait timed out",
    disconnect: "disconnect cleanup", queue: "queued", grant: "granted", release: "released", renew: "renewed", cancel: "wait withdrawn" };

  function timelineView() { return eventsTable(state.events); }

  async function showKey(key) {
    state.detail = key;
    const aside = $("detail");
    try {
      const res = await fetch("/v1/keys/" + encodeURIComponent(key), { headers: auth(), cache: "no-store" });
      if (res.status === 401) { login(); return; }
      aside.hidden = false;
      aside.replaceChildren(h("h2", {}, key), h("button", { onclick: () => { state.detail = null; aside.hidden = true; } }, "Close"));
      if (res.status === 404) { aside.append(h("p", { class: "muted" }, "Gone.")); return; }
      const doc = await res.json();
      for (const k of doc.entries) aside.append(h("h3", {}, k.kind), holders(k), h("p", {}, "Queue: "), waiters(k));
      aside.append(h("h3", {}, "Recent events"), eventsTable(doc.events.slice().reverse()));
    } catch (e) {
      $("status").textContent = String(e);
    }
  }

  function render() {
    const nav = $("tabs");
    nav.replaceChildren(...TABS.map((t) => {
      const n = t.pick ? state.keys.filter(t.pick).length : t.id === "deadlocks" ? state.deadlocks.length : state.events.length;
      return h("button", { role: "tab", "aria-selected": String(t.id === state.tab), class: t.id === "deadlocks" && n ? "hot" : "",
        onclick: () => { state.tab = t.id; render(); } }, t.title, h("span", { class: "count" }, String(n)));
    }));
    const tab = TABS.find((t) => t.id === state.tab);
    const keys = tab.pick ? state.keys.filter(tab.pick) : null;
    const body = keys && !keys.length ? h("p", { class: "muted" }, "Nothing here" + (state.prefix ? " under this prefix." : ".")) : tab.render(keys);
    $("view").replaceChildren(...[body].flat());
  }

  // The durations tick between reloads, from when each was drawn.
  setInterval(() => {
    const now = performance.now();
    for (const e of document.querySelectorAll(".tick")) {
      const ms = Math.max(0, Number(e.dataset.ms) + Number(e.dataset.dir) * (now - Number(e.dataset.at)));
      e.textContent = secs(Math.round(ms));
    }
  }, 250);

  $("login").addEventListener("submit", (ev) => {
    ev.preventDefault();
    state.token = $("token").value.trim();
    sessionStorage.setItem(TOKEN, state.token);
    $("login").hidden = true;
    start();
  });
  let typing = null;
  $("prefix").addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => { state.prefix = $("prefix").value; refresh(); restartStream(); }, 300);
  });

  async function start() {
    await refresh();
    if (!$("login").hidden) return;
    restartStream();
  }
  start();
})();
