// Package console is one agent's operator interface: an HTTP server that
// serves the JSON API under /api/v1, the web console at /, the Prometheus
// handler it is given at /metrics, and the crawl log as server-sent events.
// It also answers "why" for one URL, from a running crawl (through Crawl) or
// from a stopped crawl directory (WhyDir).
//
// The console asks the running crawl for everything through the Crawl
// interface (implemented by internal/agent) and keeps only what it samples
// itself: the rates of the last hour (History), the tallies behind the
// reports (Tally) and the recent crawl log lines (LogHub). Each of these is
// bounded.
//
// Security invariants, kept by Server for every request:
//   - the listener binds exactly the address given;
//   - a request whose Host header is not the console's address is refused
//     (403), so that a page of another origin cannot reach the console by
//     rebinding a name to its address;
//   - every state-changing call (any method but GET and HEAD) needs
//     "Authorization: Bearer TOKEN"; without it the call is refused (401),
//     logged, and nothing of it is applied. On an address that is not
//     loopback every API call needs it, reads included; the event stream
//     always needs it (or a ticket). The page shell (/,
//     its script and style sheet) carries no crawl data and is served to
//     anyone who passes the Host check, so that it can show the login form;
//   - at most Options.MaxConns connections are open at once (the listener
//     is wrapped by netcap.Limit, as every listener of an agent is): one
//     past it is closed as soon as it is accepted, counted (ConnsRefused)
//     and logged at most once a second, so that idle connections cannot
//     take the descriptors the crawl needs;
//   - what a refusal logs is bounded (refusalLog, refusals.go): at most
//     refusalsPerSecond lines a second, the rest counted, each value cut to
//     maxLoggedBytes;
//   - the token lives in a file (0600, created random when missing; one
//     its group or others may read, or shorter than 16 characters, is
//     refused) and is never written into a page: the page asks for it with a login form, or
//     exchanges a one-time code printed at start for it, keeps it in
//     sessionStorage and sends it as a header; no cookie is ever set;
//   - the event stream, which a browser's EventSource opens without headers,
//     takes a ticket instead: single use, valid for ticketTTL, obtained with
//     the token.
package console
