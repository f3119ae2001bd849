// Package testweb serves a deterministic synthetic web on loopback addresses.
//
// It is the fixture of Petrel's end-to-end tests, of the demo and of the
// benchmarks. [Start] binds one real listener per 127.x.y.z address (each
// address explicitly, never the unspecified address), serves several host
// names (under the special-use ".test" domain) on each address with net/http,
// and keeps a bounded log of every request it answered ([Web.Hits]).
//
// Everything derives from [Config.Seed]: the host names, the link graph,
// robots.txt files, redirects, duplicates and page text. Two webs started
// with the same configuration (and a fixed [Config.Port]) are byte for byte
// the same; with ephemeral ports only the port numbers differ.
//
// The normal web holds, on every host, a home page and numbered pages under
// /p/, links of every form (relative, root-relative, absolute, with upper-case
// host names and fragments), links to robots-disallowed /private/ pages,
// links to missing pages (404), 301/302 redirects to pages on the same or
// another host, exact duplicates (same bytes under another URL),
// near-duplicates (differing only in a date and a counter) and a few non-HTML
// resources (image/png, text/plain). [Web.Expected] is computed by walking
// that graph as a correct crawler would, from [Web.Seeds], obeying robots.txt
// for the product token "petrel"; [Web.Disallowed] lists the linked URLs that
// robots.txt forbids.
//
// With [Config.ChangeDay] the normal web's HTML pages change over time
// (change.go), each at its own rate from a heavy-tailed mix ([ChangeMix]) on
// a fast clock on which a day lasts ChangeDay; a page's content is a
// function of (page, version). Each host sends validators of one kind
// ([Web.HostValidators]: ETag and Last-Modified, one of them, neither, a
// Last-Modified that is always the request's time, or stale validators
// that never change) and answers If-None-Match and If-Modified-Since with
// 304 (no body, hence no Content-Length). Every [Hit] records the version
// live when it was answered and [Web.VersionAt] gives the version at any
// time, so the freshness and age of a crawler's copies can be computed
// exactly from the log.
//
// With [Config.Hostile] the web also serves the hostile cases
// (traps, redirect loops, errors, stalls, bombs, broken framing, odd
// encodings, robots.txt edge cases, unresolvable and private names), each on
// its own host name and address; [Web.HostileCases] describes what a correct
// crawler does with each. Cases that net/http cannot produce (resets, stalls,
// invalid status lines, broken framing) are served by a small raw server on
// its own listener. Hostile hosts are never linked from the normal web, and
// [Web.Expected] only covers the normal web.
//
// # Requisites site
//
// [StartRequisites] serves a small site whose pages use every form of page
// requisite (images, srcset, media, scripts, style sheets that import style
// sheets and name fonts and images relative to themselves, a chain of five
// style sheets down to an image, lazy-loading attributes, inline styles,
// an HTML document embedded with <object>, a CDN on another host), with
// [RequisitesWeb.Expected] the URLs and hop paths a crawler fetches for a
// given transclusion budget, [RequisitesWeb.Cut] those the budget cuts, and
// [RequisitesWeb.Pages] its pages and titles for a replay test. requisites.go
// lays out the site.
//
// # Generated web
//
// [StartGen] serves a web of another kind, for benchmarks at scale: a [Gen]
// computes every host name, address, URL, robots.txt and page from (seed,
// host, page) on request, holding nothing per host or page, so 10⁶ hosts
// of 10³ pages each cost no more memory than ten. Its hosts share a fixed
// set of loopback addresses (skewed: a few hold tens of thousands of
// hosts), all on one port, and its names are answered by its own DNS
// server on loopback ([DNSServer]) instead of a hosts file; the request
// log is optional and counts are always kept. [Gen] documents the shape.
//
// # Real shape
//
// With [GenConfig.Shape] set to [ShapeReal] the generated web is shaped
// like the web a crawler meets: HTTPS on most hosts with certificates of
// a certificate authority the web makes ([GenWeb.CAPEM],
// [GenWeb.WriteRealFiles]), TLS 1.2 and 1.3, HTTP/2 offered by ALPN, page
// sizes from a lognormal law, compressed when asked, latency per host,
// slow, failing and down hosts, redirects and robots.txt everywhere;
// [Gen.Reach] lists the pages a correct crawler fetches. realshape.go
// holds the laws, realpage.go the markup, gentls.go the certificate
// authority and TLS settings, genrealserve.go the serving.
//
// Invariants: serving does no heavy per-request work (page bodies are
// pre-generated or assembled from pre-generated paragraphs; bombs are built
// once, lazily; the real shape compresses pages on request, as a server
// does, and keeps at most 16,384 certificates); every response of the
// normal web and of the generated web but a 304 carries Content-Length;
// the hit log is capped ([Config.MaxHits]) and counts what it drops, and
// its times never shorten a gap (a Hit's Start is never before the client
// sent the request, its End never after the client could have read the
// response: End is when the response's last write began, noted by the
// connection, or over HTTP/2 by the handler's writes to its stream, see
// stamp.go; a Hit's Proto names the protocol of its request);
// [PolitenessGaps] (politeness.go) reads the politeness violations out of
// a log, for the tests and the crawl benchmark alike;
// connections held open by hostile cases are bounded and released by
// [Web.Close] or the cancellation of the context given to [Start].
package testweb
