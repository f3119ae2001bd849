// Petrel's web console: everything comes from the JSON API under /api/v1.
// The token is kept in sessionStorage and sent as a header; never a cookie.
"use strict";

const $ = (s) => document.querySelector(s);
const API = "/api/v1";
let token = sessionStorage.getItem("petrel-token") || "";
let state = "";
let settingsLoaded = false;

// ---- API ----
async function api(method, path, body) {
  const headers = { "Accept": "application/json" };
  if (token) headers["Authorization"] = "Bearer " + token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const r = await fetch(API + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store" });
  let data = null;
  try { data = await r.json(); } catch (e) { data = null; }
  if (r.status === 401) {
    if (token) { token = ""; sessionStorage.removeItem("petrel-token"); }
    updateLogin();
    showLogin();
    throw Object.assign(new Error((data && data.error) || "this needs the console's token"), { status: 401 });
  }
  if (!r.ok) throw new Error((data && data.error) || (r.status + " " + r.statusText));
  return data;
}

// ---- formatting ----
const nf = new Intl.NumberFormat("en-US");
function num(n) { return n === undefined || n === null ? "–" : nf.format(Math.round(n)); }
function short(n) {
  if (n === undefined || n === null) return "–";
  const a = Math.abs(n);
  if (a >= 1e9) return (n / 1e9).toFixed(2) + "G";
  if (a >= 1e6) return (n / 1e6).toFixed(2) + "M";
  if (a >= 1e4) return (n / 1e3).toFixed(1) + "k";
  return nf.format(Math.round(n * 10) / 10);
}
function bytes(n) {
  if (n === undefined || n === null) return "–";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i === 0 ? Math.round(n) : n.toFixed(n >= 100 ? 0 : 1)) + " " + u[i];
}
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else if (k === "text") e.textContent = v; else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
}
function flash(msg, bad) {
  const f = $("#flash");
  f.textContent = msg;
  f.className = "flash" + (bad ? " bad" : "");
  f.hidden = false;
  clearTimeout(flash.t);
  flash.t = setTimeout(() => { f.hidden = true; }, bad ? 8000 : 3500);
}

// ---- login ----
function updateLogin() {
  const b = $("#btn-login");
  b.textContent = token ? "Log out" : "Log in";
}
function showLogin() {
  const d = $("#login");
  if (!d.open) { $("#login-result").textContent = ""; d.showModal(); $("#login-token").focus(); }
}
async function login(body) {
  const r = await fetch(API + "/login", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const data = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(data.error || "login failed");
  token = data.token;
  sessionStorage.setItem("petrel-token", token);
  updateLogin();
}
async function loginFromLink() {
  const m = /^#code=([0-9a-f]+)$/.exec(location.hash);
  if (!m) return;
  history.replaceState(null, "", location.pathname + "#overview");
  try { await login({ code: m[1] }); flash("Logged in."); }
  catch (e) { flash("The one-time link was used already or expired: log in with the token.", true); }
}

// ---- actions ----
async function act(name, confirmText) {
  if (confirmText && !confirm(confirmText)) return;
  try {
    const r = await api("POST", "/" + name);
    flash(name[0].toUpperCase() + name.slice(1) + ": done, the crawl is " + r.state + ".");
    refreshSoon();
  } catch (e) { flash(name + ": " + e.message, true); }
}

// ---- overview ----
function setText(id, v) { const e = document.getElementById(id); if (e) e.textContent = v; }

function renderStatus(s) {
  state = s.state;
  const b = $("#state");
  b.textContent = s.state;
  b.className = "badge " + s.state;
  setText("uptime", "up " + s.uptime);
  $("#btn-pause").hidden = s.state === "paused";
  $("#btn-resume").hidden = s.state !== "paused";
  for (const id of ["#btn-pause", "#btn-resume", "#btn-checkpoint", "#btn-stop"]) {
    $(id).disabled = s.state === "stopping" || s.state === "finished";
  }
  const t = s.totals, f = s.frontier;
  setText("k-pages", num(t.pages));
  setText("k-pages-s", "robots.txt " + num(t.robots_txt));
  setText("k-rate", short(s.rates.pages_per_s));
  setText("k-rate-s", "average " + short(s.rates.avg_pages_per_s));
  setText("k-bps", bytes(s.rates.bytes_per_s));
  setText("k-bytes", bytes(t.bytes) + " in all");
  setText("k-known", num(t.urls_known));
  setText("k-known-s", "links found " + short(t.links_found));
  setText("k-queued", num(f.ready + f.queued));
  setText("k-queued-s", short(f.ready) + " in the ready queue");
  setText("k-inflight", num(f.in_flight));
  setText("k-inflight-s", "hosts active " + short(f.hosts_active));
  setText("k-errors", num(t.errors));
  setText("k-errors-s", "5xx " + short(s.status_classes["5xx"]) + " · 4xx " + short(s.status_classes["4xx"]));
  setText("k-warc", bytes(t.warc_bytes));
  setText("k-warc-s", num(t.stored) + " records");
  bars("#bars-status", s.status_classes, (k) => "c" + k);
  bars("#bars-content", s.content_types);
  bars("#bars-cuts", s.cuts);
  kv("#frontier", [
    ["Sieve buffered", num(f.sieve_buffered)], ["Ready queue", num(f.ready)],
    ["Queued in hosts", num(f.queued) + " (" + bytes(f.queued_bytes) + ")"], ["Virtualized on disk", num(f.virtualized)],
    ["Visit states", num(f.visit_states)], ["Hosts active / waiting / broken", num(f.hosts_active) + " / " + num(f.hosts_waiting) + " / " + num(f.hosts_broken)],
    ["IP entries", num(f.ip_entries)], ["Front size", num(f.front_size)],
    ["Fetchers waited", num(s.fetchers.waits) + " times, " + s.fetchers.wait_total],
    ["Duplicates", "payload " + num(s.duplicates.payload) + ", text " + num(s.duplicates.text) + ", near " + num(s.duplicates.near)],
    ["DNS failures", num(s.dns.failures)], ["Robots.txt denied", num(s.robots.denied)],
  ]);
  const errs = $("#errors");
  errs.replaceChildren();
  if (!s.recent_errors || !s.recent_errors.length) errs.append(emptyRow(3, "No errors."));
  for (const e of (s.recent_errors || []).slice(0, 12)) {
    errs.append(el("tr", {}, el("td", { class: "mono", text: new Date(e.time).toLocaleTimeString() }),
      el("td", { text: e.url }), el("td", { text: e.error })));
  }
  renderRevisits(s.revisits);
  const members = s.cluster || [];
  $("#cluster-panel").hidden = members.length === 0;
  const cl = $("#cluster");
  cl.replaceChildren();
  for (const m of members) {
    cl.append(el("tr", {}, el("td", { text: m.name }), el("td", { class: "mono", text: m.addr }),
      el("td", { text: m.state }), el("td", { class: "n", text: num(m.owned) })));
  }
  if (s.history) { lastHistory = s.history; drawCharts(); }
}

// renderRevisits shows a revisit crawl's schedule (absent: not one).
function renderRevisits(r) {
  $("#revisit-panel").hidden = !r;
  if (!r) return;
  const share = (n) => r.revisits > 0 ? " (" + (100 * n / r.revisits).toFixed(1) + " %)" : "";
  kv("#revisits", [
    ["Scheduled", num(r.scheduled)], ["Due now or overdue", num(r.due)], ["Due within the hour", num(r.due_hour)],
    ["Issued, not yet visited", num(r.issued)], ["Revisits done", num(r.revisits)],
    ["Not modified (304)", num(r.not_modified) + share(r.not_modified)],
    ["Unchanged (same payload)", num(r.unchanged) + share(r.unchanged)],
    ["Bytes spared by 304s", bytes(r.bytes_saved)], ["Duplicate tasks not fetched", num(r.skipped)],
    ["Estimated freshness", (100 * r.freshness).toFixed(1) + " %"],
  ]);
}

// The charts are drawn at their boxes' size: not while the overview is
// hidden (its boxes have none), and again when it is shown.
let lastHistory = null;
function drawCharts() {
  if (!lastHistory || $("#chart-pages").clientWidth === 0) return;
  chart("#chart-pages", lastHistory, "pages_per_s", short, "var(--chart)");
  chart("#chart-bytes", lastHistory, "bytes_per_s", bytes, "var(--chart2)");
}

function emptyRow(n, text) { return el("tr", { class: "empty" }, el("td", { colspan: n, text })); }

function bars(sel, m, cls) {
  const box = $(sel);
  box.replaceChildren();
  const entries = Object.entries(m || {}).filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]);
  if (!entries.length) { box.append(el("div", { class: "muted", text: "Nothing yet." })); return; }
  const top = entries[0][1];
  for (const [k, v] of entries) {
    const fill = el("div", { class: "fill " + (cls ? cls(k) : "") });
    fill.style.width = Math.max(1, (100 * v) / top) + "%";
    box.append(el("div", { class: "bar" }, el("span", { class: "name", text: k, title: k }), el("div", { class: "track" }, fill), el("span", { class: "num", text: short(v) })));
  }
}

function kv(sel, pairs) {
  const dl = $(sel);
  dl.replaceChildren();
  for (const [k, v] of pairs) dl.append(el("dt", { text: k }), el("dd", { text: v }));
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}
function chart(sel, hist, key, fmt, color) {
  const box = $(sel);
  const w = box.clientWidth, h = box.clientHeight || 170;
  const padL = 52, padR = 8, padT = 8, padB = 20;
  box.replaceChildren();
  // Drawn at the box's pixel size (no viewBox), so that text is never
  // stretched; a resize redraws it.
  const s = svg("svg", { width: w, height: h, role: "img", "aria-label": key });
  box.append(s);
  // The last hour, or less while the crawl is younger than that.
  const now = Date.now();
  const first = hist.length ? Date.parse(hist[0].t) : now;
  const t0 = Math.max(now - 3600e3, Math.min(first, now - 60e3));
  const span = now - t0;
  const pts = hist.map((p) => [Date.parse(p.t), p[key]]).filter((p) => p[0] >= t0);
  let top = Math.max(1, ...pts.map((p) => p[1]));
  const mag = Math.pow(10, Math.floor(Math.log10(top)));
  top = Math.ceil(top / mag) * mag;
  const x = (t) => padL + ((t - t0) / span) * (w - padL - padR);
  const y = (v) => padT + (1 - v / top) * (h - padT - padB);
  for (let i = 0; i <= 4; i++) {
    const v = (top * i) / 4;
    s.append(svg("line", { x1: padL, x2: w - padR, y1: y(v), y2: y(v), stroke: "#e8edf3", "stroke-width": 1 }));
    const lab = svg("text", { x: padL - 6, y: y(v) + 3.5, "text-anchor": "end" });
    lab.textContent = fmt(v);
    s.append(lab);
  }
  const ago = (ms) => ms >= 60e3 ? "−" + Math.round(ms / 60e3) + " min" : "−" + Math.round(ms / 1e3) + " s";
  const fracs = w < 500 ? [0, 0.5, 1] : [0, 0.25, 0.5, 0.75, 1];
  for (const f of fracs) {
    const lab = svg("text", { x: x(t0 + f * span), y: h - 5, "text-anchor": f === 0 ? "start" : f === 1 ? "end" : "middle" });
    lab.textContent = f === 1 ? "now" : ago((1 - f) * span);
    s.append(lab);
  }
  if (pts.length < 2) {
    box.append(el("div", { class: "empty", text: "Sampling… (a point every few seconds)" }));
    return;
  }
  const line = pts.map((p, i) => (i ? "L" : "M") + x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1)).join("");
  const area = line + `L${x(pts[pts.length - 1][0]).toFixed(1)},${y(0)}L${x(pts[0][0]).toFixed(1)},${y(0)}Z`;
  s.append(svg("path", { d: area, fill: color, "fill-opacity": 0.12, stroke: "none" }));
  s.append(svg("path", { d: line, fill: "none", stroke: color, "stroke-width": 1.8, "stroke-linejoin": "round" }));
}

function hostRows(tbody, list, withBytes) {
  tbody.replaceChildren();
  if (!list.length) tbody.append(emptyRow(withBytes ? 6 : 5, "No hosts yet."));
  for (const h of list) {
    const cells = [el("td", { text: h.host }), el("td", { class: "n", text: num(h.queued) }),
      el("td", { class: "n", text: num(h.fetched) }), el("td", { class: "n", text: num(h.errors) })];
    if (withBytes) cells.push(el("td", { class: "n", text: bytes(h.bytes) }));
    cells.push(el("td", {}, el("span", { class: "pill " + (h.state || ""), text: h.state || "–" })));
    const tr = el("tr", { class: "click", title: "Details of " + h.host }, ...cells);
    tr.addEventListener("click", () => { location.hash = "#hosts"; showHost(h.host); });
    tbody.append(tr);
  }
}

// ---- refresh loop ----
// One refresh at a time: the next is scheduled when the previous one ends,
// so that the answers of a slow crawl never pile up, and none is scheduled
// while the page is hidden (showing it again refreshes at once).
const refreshEvery = 2000;
let refreshTimer = null, refreshing = false, refreshAgain = false;
function scheduleRefresh(ms) {
  clearTimeout(refreshTimer);
  refreshTimer = document.hidden ? null : setTimeout(runRefresh, ms);
}
// refreshSoon refreshes now, or right after the refresh under way.
function refreshSoon() {
  if (refreshing) refreshAgain = true; else scheduleRefresh(0);
}
async function runRefresh() {
  refreshTimer = null;
  refreshing = true;
  try { await refresh(); } finally {
    refreshing = false;
    const again = refreshAgain;
    refreshAgain = false;
    scheduleRefresh(again ? 0 : refreshEvery);
  }
}
document.addEventListener("visibilitychange", () => {
  if (document.hidden) { clearTimeout(refreshTimer); refreshTimer = null; } else refreshSoon();
});
let ticks = 0;
async function refresh() {
  const tick = ticks++;
  try {
    renderStatus(await api("GET", "/status" + (tick % 3 === 0 ? "?history=1" : "")));
  } catch (e) {
    $("#state").textContent = "unreachable";
    $("#state").className = "badge stopping";
    return;
  }
  try {
    if (tick % 2 === 0 && current() === "overview") {
      hostRows($("#top-hosts"), await api("GET", "/hosts?sort=queued&limit=8"), false);
    }
    if (current() === "hosts" && tick % 3 === 0) loadHosts();
  } catch (e) {
    const tb = $("#top-hosts");
    tb.replaceChildren(emptyRow(5, "Hosts: " + e.message));
  }
}

// ---- hosts ----
async function loadHosts() {
  try { hostRows($("#hosts"), await api("GET", "/hosts?sort=" + $("#hosts-sort").value + "&limit=100"), true); }
  catch (e) { flash("hosts: " + e.message, true); }
}
async function showHost(name) {
  try {
    const d = await api("GET", "/hosts/" + encodeURIComponent(name));
    $("#host-detail").hidden = false;
    setText("host-title", d.host);
    const t = (v) => (v ? new Date(v).toLocaleTimeString() : "–");
    kv("#host-kv", [["State", d.state], ["Address", d.addr || "–"], ["Queued", num(d.queued)], ["Virtualized", num(d.virtualized)],
      ["In flight", num(d.in_flight)], ["Next fetch", t(d.next_fetch)], ["Delay", d.delay + " (" + d.delay_reason + ")"],
      ["IP entry's next fetch", t(d.ip_next_fetch)], ["Budget", num(d.budget_used) + " of " + (d.budget_limit ? num(d.budget_limit) : "no limit")],
      ["Robots.txt", d.robots], ["Fetched", num(d.fetched)], ["Errors", num(d.errors)], ["Bytes", bytes(d.bytes)],
      ["Last errors", (d.last_errors || []).join("\n") || "–"]]);
  } catch (e) { flash(e.message, true); }
}

// ---- settings ----
async function loadSettings() {
  try {
    const list = await api("GET", "/config?describe=1");
    const box = $("#settings");
    box.replaceChildren();
    let group = "";
    for (const st of list) {
      if (st.group !== group) {
        group = st.group;
        box.append(el("h3", { class: "group", text: group }));
      }
      const v = st.value;
      const shown = v === null ? "" : (typeof v === "object" ? JSON.stringify(v) : String(v));
      const input = el("input", { id: "set-" + st.name, name: st.name, value: shown, "data-orig": shown, "data-kind": typeof v, autocomplete: "off" });
      if (st.choices && st.choices.length) input.setAttribute("list", "choices-" + st.name);
      if (!st.live) { input.readOnly = true; input.title = "Fixed while the crawl runs: " + st.fixed; }
      input.addEventListener("input", () => input.classList.toggle("changed", input.value !== input.dataset.orig));
      const help = st.live ? st.help : st.help + " — fixed: " + st.fixed;
      const label = el("label", { for: "set-" + st.name, text: st.name });
      if (st.cluster_wide) {
        label.append(" ", el("span", { class: "pill cluster-wide", text: "cluster-wide",
          title: "Every agent of a crawl of several holds the same value: an agent with another is refused when it joins, and a change is made on every agent or on none." }));
      }
      const row = el("div", { class: "setting" + (st.live ? " live" : " fixed") + (st.cluster_wide ? " cluster-wide" : "") },
        label, input, el("div", { class: "help", text: help }));
      if (st.choices && st.choices.length) {
        const dl = el("datalist", { id: "choices-" + st.name });
        for (const c of st.choices) dl.append(el("option", { value: c }));
        row.append(dl);
      }
      box.append(row);
    }
    settingsLoaded = true;
  } catch (e) { flash("settings: " + e.message, true); }
}
async function applySettings(ev) {
  ev.preventDefault();
  const changes = {};
  for (const i of document.querySelectorAll("#settings input.changed")) {
    let v = i.value;
    if (i.dataset.kind === "number") v = Number(v);
    else if (i.dataset.kind === "boolean") v = v === "true";
    else if (i.dataset.kind === "object") { try { v = JSON.parse(v); } catch (e) { /* sent as text */ } }
    changes[i.name] = v;
  }
  if (!Object.keys(changes).length) { setText("settings-result", "Nothing changed."); return; }
  try {
    await api("PATCH", "/config", changes);
    setText("settings-result", "Applied: " + Object.keys(changes).join(", ") + ".");
    flash("Settings changed: " + Object.keys(changes).join(", "));
    await loadSettings();
  } catch (e) { setText("settings-result", ""); flash("Not applied: " + e.message, true); }
}

// ---- log ----
// Lines arrive as fast as the crawl fetches: they are kept in an array
// (the last logKeep) and drawn at most four times a second.
const logKeep = 1000;
let logSource = null, logLines = [], logDirty = false;
function drawLog() {
  if (!logDirty) return;
  logDirty = false;
  const pre = $("#log");
  const stick = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 20;
  pre.textContent = logLines.join("\n");
  if (stick) pre.scrollTop = pre.scrollHeight;
}
function logLine(l) {
  logLines.push(l);
  if (logLines.length > logKeep * 1.2) logLines = logLines.slice(-logKeep);
  logDirty = true;
}
// A stream that fails (the crawl restarted, the network dropped) is
// opened again with a new ticket after a wait that doubles up to
// logRetryMax, and starts over at 1 s once a stream opens.
const logRetryMax = 30000;
let logRetryWait = 1000, logRetryTimer = null, logOpened = false;
async function followLog() {
  if (logSource || logRetryTimer) return;
  let src;
  try {
    const t = await api("POST", "/ticket");
    // The first stream shows the last lines; a reopened one only the new.
    src = new EventSource(API + "/log?follow=1&tail=" + (logOpened ? 0 : 200) + "&ticket=" + encodeURIComponent(t.ticket));
  } catch (e) {
    if (e.status === 401) { setText("log-state", "needs the token"); return; }
    setText("log-state", "not following: " + e.message);
    retryLog();
    return;
  }
  logSource = src;
  setText("log-state", "following");
  src.onopen = () => {
    if (logOpened && logRetryWait > 1000) logLine("… reconnected; lines logged meanwhile are not shown");
    logOpened = true;
    logRetryWait = 1000;
    setText("log-state", "following");
  };
  src.onmessage = (e) => logLine(e.data);
  src.addEventListener("dropped", (e) => logLine("… " + e.data + " lines not shown (the page was slower than the crawl)"));
  src.onerror = () => {
    src.close();
    if (logSource === src) logSource = null;
    retryLog();
  };
}
function retryLog() {
  const wait = logRetryWait;
  logRetryWait = Math.min(2 * logRetryWait, logRetryMax);
  setText("log-state", "disconnected; trying again in " + Math.round(wait / 1000) + " s");
  logRetryTimer = setTimeout(() => { logRetryTimer = null; followLog(); }, wait);
}
setInterval(drawLog, 250);

// ---- why ----
async function why(u) {
  location.hash = "#why";
  $("#why-url").value = u;
  const out = $("#why-result");
  out.replaceChildren(el("p", { class: "muted", text: "Asking the crawl…" }));
  try {
    const w = await api("GET", "/why?url=" + encodeURIComponent(u));
    const box = el("div", { class: "answer" });
    box.append(el("h3", { text: w.url }));
    const st = el("p", {}, "State: ", el("span", { class: "wstate wstate-" + w.state, id: "why-state", text: w.state + (w.rule ? " (" + w.rule + ")" : "") }));
    box.append(st);
    if (w.detail) box.append(el("p", { text: w.detail }));
    const dl = el("dl", { class: "kv" });
    for (const f of w.facts || []) dl.append(el("dt", { text: f.name }), el("dd", { text: f.value }));
    box.append(dl);
    for (const c of w.caveats || []) box.append(el("div", { class: "caveat", text: c }));
    out.replaceChildren(box);
  } catch (e) { out.replaceChildren(el("p", { class: "err", text: e.message })); }
}

// ---- tabs ----
function current() { return (location.hash || "#overview").slice(1).split("?")[0] || "overview"; }
function showTab() {
  let name = current();
  if (!document.getElementById("tab-" + name)) name = "overview";
  for (const s of document.querySelectorAll(".tab")) s.hidden = s.id !== "tab-" + name;
  for (const a of document.querySelectorAll("#tabs a")) a.classList.toggle("on", a.dataset.tab === name);
  if (name === "overview") drawCharts();
  if (name === "settings" && !settingsLoaded) loadSettings();
  if (name === "hosts") loadHosts();
  if (name === "log") followLog();
}

document.addEventListener("DOMContentLoaded", async () => {
  updateLogin();
  $("#btn-pause").addEventListener("click", () => act("pause"));
  $("#btn-resume").addEventListener("click", () => act("resume"));
  $("#btn-checkpoint").addEventListener("click", () => act("checkpoint"));
  $("#btn-stop").addEventListener("click", () => act("stop", "Stop the crawl? Its state is saved; the same command resumes it."));
  $("#btn-login").addEventListener("click", () => {
    if (token) { token = ""; sessionStorage.removeItem("petrel-token"); updateLogin(); flash("Logged out."); } else showLogin();
  });
  $("#login-cancel").addEventListener("click", () => $("#login").close());
  $("#login-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try { await login({ token: $("#login-token").value.trim() }); $("#login").close(); $("#login-token").value = ""; flash("Logged in."); refreshSoon(); }
    catch (e) { setText("login-result", e.message); }
  });
  $("#seeds-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const urls = $("#seeds-text").value.split("\n").map((s) => s.trim()).filter((s) => s && !s.startsWith("#"));
    try {
      const r = await api("POST", "/seeds", { urls });
      const refused = r.results.filter((x) => !x.accepted).map((x) => x.url + ": " + x.reason);
      setText("seeds-result", r.accepted + " added" + (refused.length ? "; refused " + refused.join("; ") : "") + ".");
      if (!refused.length) $("#seeds-text").value = "";
    } catch (e) { setText("seeds-result", e.message); }
  });
  $("#settings-form").addEventListener("submit", applySettings);
  $("#hosts-sort").addEventListener("change", loadHosts);
  $("#why-form").addEventListener("submit", (ev) => { ev.preventDefault(); why($("#why-url").value.trim()); });
  $("#why-quick").addEventListener("submit", (ev) => { ev.preventDefault(); why($("#why-quick-url").value.trim()); });
  window.addEventListener("hashchange", showTab);
  window.addEventListener("resize", drawCharts);
  await loginFromLink();
  showTab();
  if (document.body.dataset.loopback !== "true" && !token) showLogin();
  scheduleRefresh(0);
});
