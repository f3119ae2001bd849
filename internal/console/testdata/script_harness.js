// Runs the console's script (argv[2]) in Node against a fake page: a DOM
// that accepts anything, a fetch whose answers take fetchDelay ms, a fake
// EventSource and a virtual clock. It prints one JSON object of what it
// saw, for script_test.go to judge.
"use strict";
const fs = require("fs");
const realImmediate = setImmediate;

// ---- virtual clock ----
let now = 0, seq = 0;
const timers = new Map();
globalThis.setTimeout = (fn, ms) => { const id = ++seq; timers.set(id, { at: now + Math.max(ms || 0, 0), fn, every: 0 }); return id; };
globalThis.setInterval = (fn, ms) => { const id = ++seq; timers.set(id, { at: now + ms, fn, every: ms }); return id; };
globalThis.clearTimeout = globalThis.clearInterval = (id) => { timers.delete(id); };
const settle = async () => { for (let i = 0; i < 20; i++) await new Promise((r) => realImmediate(r)); };
async function advance(ms) {
  const end = now + ms;
  await settle();
  for (;;) {
    let next = null;
    for (const [id, t] of timers) if (t.at <= end && (!next || t.at < next[1].at)) next = [id, t];
    if (!next) break;
    const [id, t] = next;
    now = t.at;
    if (t.every) t.at += t.every; else timers.delete(id);
    t.fn();
    await settle();
  }
  now = end;
}

// ---- a page that accepts anything ----
function stub() {
  const props = {};
  return new Proxy(function () { return stub(); }, {
    get(_, k) {
      if (k in props) return props[k];
      if (k === "then") return undefined;
      if (k === Symbol.toPrimitive) return () => 0;
      if (k === Symbol.iterator) return function* () {};
      return (props[k] = stub());
    },
    set(_, k, v) { props[k] = v; return true; },
  });
}
const elems = new Map();
const elem = (sel) => { if (!elems.has(sel)) elems.set(sel, stub()); return elems.get(sel); };
const listeners = {};
globalThis.document = {
  hidden: false,
  body: { dataset: { loopback: "true" } },
  addEventListener(type, fn) { (listeners[type] = listeners[type] || []).push(fn); },
  querySelector: elem,
  querySelectorAll: () => [],
  getElementById: (id) => elem("#" + id),
  createElement: () => stub(),
};
const fire = async (type) => { for (const fn of listeners[type] || []) await fn(); await settle(); };
globalThis.window = { addEventListener() {} };
globalThis.location = { hash: "#log", pathname: "/" };
globalThis.history = { replaceState() {} };
globalThis.sessionStorage = { getItem: () => null, setItem() {}, removeItem() {} };
globalThis.confirm = () => true;

// ---- the API: each answer takes fetchDelay ms ----
const fetchDelay = 5000;
let statusInFlight = 0, statusMax = 0, statusCalls = 0, ticketCalls = 0;
globalThis.fetch = (url) => {
  const status = url.startsWith("/api/v1/status");
  if (status) { statusCalls++; statusMax = Math.max(statusMax, ++statusInFlight); }
  if (url.startsWith("/api/v1/ticket")) ticketCalls++;
  return new Promise((res) => setTimeout(() => {
    if (status) statusInFlight--;
    res({ status: 200, ok: true, json: async () => ({ ticket: "t", state: "running" }) });
  }, url.startsWith("/api/v1/ticket") ? 0 : fetchDelay));
};

// ---- the event stream ----
const streams = [];
let streamsOpen = true; // whether a new stream opens (onopen) before it fails
globalThis.EventSource = class {
  constructor(url) {
    this.url = url; this.closed = false; streams.push(this);
    if (streamsOpen) setTimeout(() => this.onopen && this.onopen(), 0);
  }
  addEventListener() {}
  close() { this.closed = true; }
};

(async () => {
  (0, eval)(fs.readFileSync(process.argv[2], "utf8"));
  await fire("DOMContentLoaded");
  const out = {};
  // A slow crawl: answers take 5 s; over 30 s no two status requests overlap.
  await advance(30000);
  out.statusMaxInFlight = statusMax;
  out.statusCallsSlow = statusCalls;
  // A hidden page polls nothing; shown again, it refreshes at once.
  await advance(10000); // let the refresh under way end
  document.hidden = true;
  await fire("visibilitychange");
  const before = statusCalls;
  await advance(60000);
  out.statusCallsHidden = statusCalls - before;
  document.hidden = false;
  await fire("visibilitychange");
  await advance(10);
  out.statusCallsShown = statusCalls - before;
  // The event stream: opened by the log tab; after an error, opened again
  // with a new ticket, after a wait that grows.
  out.streamsAtFirst = streams.length;
  // The first error: the stream had opened. Then streams that fail
  // without opening (the crawl is down): the wait doubles.
  const reopenedAfter = [];
  for (let i = 0; i < 4; i++) {
    if (i === 1) streamsOpen = false;
    const s = streams[streams.length - 1];
    const n = streams.length;
    try { s.onerror && s.onerror(); } catch (e) { out.onerrorThrew = String(e); }
    let waited = 0;
    while (streams.length === n && waited < 120000) { await advance(250); waited += 250; }
    reopenedAfter.push(streams.length > n ? waited : -1);
  }
  out.reopenedAfterMs = reopenedAfter;
  out.firstClosed = streams[0].closed;
  out.reopenedTail0 = streams.length > 1 && streams[1].url.includes("tail=0");
  console.log(JSON.stringify(out));
  process.exit(0);
})().catch((e) => { console.error(e && e.stack || e); process.exit(1); });
