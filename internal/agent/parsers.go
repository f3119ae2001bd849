package agent

import (
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/petrel-crawler/petrel/internal/bloom"
	"github.com/petrel-crawler/petrel/internal/console"
	"github.com/petrel-crawler/petrel/internal/crawllog"
	"github.com/petrel-crawler/petrel/internal/fetch"
	"github.com/petrel-crawler/petrel/internal/filter"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/parse"
	"github.com/petrel-crawler/petrel/internal/sieve"
	"github.com/petrel-crawler/petrel/internal/store"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// parseLoop is one parser: it stores each response in the WARC files and,
// for HTML pages, extracts the links and enqueues them, until results
// closes or quit does (the pool of parsers shrank).
func (a *Agent) parseLoop(results <-chan *fetched, quit <-chan struct{}) {
	for {
		var r *fetched
		var ok bool
		select {
		case r, ok = <-results:
		case <-quit:
			return
		}
		if !ok {
			return
		}
		a.handle(r)
		r.resp.Release()
		a.frontier.Release(r.task)
	}
}

func (a *Agent) handle(r *fetched) {
	resp, t := r.resp, r.task
	st := a.stats
	if a.observe != nil {
		a.observe(resp.URL, t.Meta)
	}
	if t.Robots {
		st.RobotsFetched.Add(1)
	} else {
		st.Fetched.Add(1)
		st.CountStatus(resp.Status)
		st.CountContentType(resp.Header.Get("Content-Type"))
	}
	st.BytesReceived.Add(int64(len(resp.RawResponse)))
	if a.console != nil { // the histograms are read only through the console's /metrics
		a.metrics.ObserveFetch(resp.End.Sub(resp.Start), len(resp.RawResponse))
	}
	if a.tally != nil {
		a.tally.Record(console.Fetch{URL: resp.URL, Host: t.SchemeAuthority, Status: resp.Status, MIME: resp.Header.Get("Content-Type"),
			Bytes: int64(len(resp.RawResponse)), Location: a.location(resp), Robots: t.Robots, Time: resp.End})
	}
	if resp.Truncated != "" {
		st.Truncated.Add(1)
	}
	pre := a.readEarly(t, resp) // languages.go; nil unless they are wanted
	langs := pre.languages()
	if !t.Robots && !a.passResponse(filter.StageStore, t.Meta, resp, false, langs) {
		// Not stored, but read as a stored page is: its links are
		// followed as the follow filter says.
		a.logResponse(t, r.fetcher, resp, nil, "nostore", langs)
		a.unclaimRevisit(t, r.revisit, true) // revisits.go: a revisit not stored is scheduled again one interval on
		a.follow(t, resp, false, false, pre)
		return
	}
	res, err := a.store.Write(&store.Exchange{
		TargetURI:   resp.URL,
		IP:          resp.Addr.String(),
		Date:        resp.Start,
		Request:     resp.RawRequest,
		Response:    resp.RawResponse,
		Truncated:   resp.Truncated,
		TLS:         a.tlsInfo(resp),
		HTTP2:       resp.Proto == fetch.Proto2,
		NotModified: notModifiedOf(r), // revisits.go
		Languages:   langs,
		Note:        pre.note(), // datasetread.go
	})
	a.visitedRevisit(r, res, err)
	stored := err == nil
	if err != nil {
		st.StoreErrors.Add(1)
		a.log.Error("store", "url", resp.URL, "err", err)
		a.logResponse(t, r.fetcher, resp, nil, "err:store", langs)
		a.storeFailed(err)
	} else {
		st.Stored.Add(1)
		if res.Revisit {
			st.Duplicates.Add(1)
		}
		if res.Prior {
			st.PriorRevisits.Add(1)
			st.PriorBytes.Add(res.Omitted)
		}
		a.logResponse(t, r.fetcher, resp, &res, "", langs)
	}
	// A payload of an earlier crawl is new to this one: its links are
	// followed as a page stored in full would have them followed.
	a.follow(t, resp, stored, stored && res.Revisit && !res.Prior, pre)
}

// follow goes on from a response: a robots.txt's sitemaps, a sitemap, a
// redirect's target, or what a 2xx response leads to (see parse).
// duplicate says the payload was stored as a revisit record; pre is the
// page as read before it was stored (nil when it was not).
func (a *Agent) follow(t *frontier.Task, resp *fetch.Response, stored, duplicate bool, pre *early) {
	m := t.Meta
	base, err := urlx.Parse(resp.URL)
	if err != nil {
		return
	}
	via := sieve.Hash([]byte(resp.URL))
	if t.Robots {
		if a.cfg.Sitemaps && resp.Status >= 200 && resp.Status < 300 {
			a.robotsSitemaps(base, resp, t.Meta, via)
		}
		return
	}
	if a.cfg.Sitemaps {
		if level, ok := sitemapLevel(t.Meta); ok {
			a.sitemapResponse(base, resp, t.Meta, via, level)
			return
		}
	}
	switch {
	case resp.Status >= 300 && resp.Status < 400:
		if loc := resp.Header.Get("Location"); loc != "" {
			u, err := base.Resolve(loc)
			switch {
			case err != nil:
				a.refuseLocation(loc, resp.URL, m.Redirect(via), err)
			case a.passResponse(filter.StageFollow, m, resp, duplicate, ""):
				a.stats.Redirects.Add(1)
				a.offer(u, resp.URL, m.Redirect(via))
			}
		}
	case resp.Status >= 200 && resp.Status < 300:
		if a.passResponse(filter.StageParse, m, resp, duplicate, pre.languages()) {
			a.parse(base, resp, m, via, stored, duplicate, pre)
		}
	}
}

// sitemapResponse handles the response to a URL enqueued as a sitemap of
// level: read when 2xx, its redirect target a sitemap of the same level.
func (a *Agent) sitemapResponse(base urlx.URL, resp *fetch.Response, m frontier.Meta, via uint64, level uint8) {
	switch {
	case resp.Status >= 300 && resp.Status < 400:
		loc := resp.Header.Get("Location")
		u, err := base.Resolve(loc)
		switch {
		case err != nil && loc != "":
			a.refuseLocation(loc, resp.URL, m.Redirect(via), err)
		case err == nil:
			a.stats.Redirects.Add(1)
			a.offerSitemap(u, resp.URL, m.Redirect(via))
		}
	case resp.Status >= 200 && resp.Status < 300:
		a.readSitemap(base, resp, m, via, level)
	}
}

// refuseLocation counts and logs (crawl.log and skipped.jsonl, as a URL
// rule) the target of a redirect from the page via that is not a URL the
// crawl can fetch: another scheme (file:, gopher:, javascript:), or no URL
// at all. The rule says why, the URL field holds the Location (cut to
// urlx.MaxLength).
func (a *Agent) refuseLocation(loc, via string, m frontier.Meta, err error) {
	a.countRefusal(crawllog.ReasonRule)
	why := err.Error()
	if i := strings.LastIndex(why, ": "); i >= 0 {
		why = why[i+2:]
	}
	if len(loc) > urlx.MaxLength {
		loc = strings.ToValidUTF8(loc[:urlx.MaxLength], "")
	}
	a.refuse(loc, via, m, crawllog.ReasonRule, "Location: "+why)
}

// tlsInfo describes the TLS connection of resp for its WARC record (nil
// for http), counting and logging a certificate that did not verify.
func (a *Agent) tlsInfo(resp *fetch.Response) *store.TLSInfo {
	ts := resp.TLS
	if ts == nil {
		return nil
	}
	switch {
	case ts.Verified:
		a.stats.TLSVerified.Add(1)
	case ts.VerifyError != "":
		a.stats.TLSUnverified.Add(1)
		a.log.Info("tls certificate not verified", "url", resp.URL, "err", ts.VerifyError)
	}
	return &store.TLSInfo{Protocol: ts.Version, CipherSuite: ts.Cipher, Verify: ts.Outcome()}
}

// location returns the resolved redirect target of a response ("" if none).
func (a *Agent) location(resp *fetch.Response) string {
	if resp.Status < 300 || resp.Status >= 400 {
		return ""
	}
	loc := resp.Header.Get("Location")
	if loc == "" {
		return ""
	}
	base, err := urlx.Parse(resp.URL)
	if err != nil {
		return ""
	}
	u, err := base.Resolve(loc)
	if err != nil {
		return ""
	}
	return u.String()
}

// parse extracts what a 2xx response leads to: the links and requisites
// of an HTML page, the requisites of a style sheet, the string literals
// of a script that look like requisites (--js-literals). The requisites of a
// document m.Embeds hops after the last link hop are followed while
// m.Embeds is below its limit (embedHops); past it they are still
// extracted, and each is counted and logged as cut. A document reached
// through requisites (m.Embeds > 0) is not a page, so its links are not
// followed and it is not in the page log. A page stored whole goes into
// the page log (as a seed's page when m is a seed's). With
// --max-embed-hops 0 requisites are not extracted at all. A page read
// before it was stored (pre, not nil) is not decoded or parsed again.
func (a *Agent) parse(base urlx.URL, resp *fetch.Response, m frontier.Meta, via uint64, stored, duplicate bool, pre *early) {
	st := a.stats
	l := a.live.Load()
	requisites := a.cfg.MaxEmbedHops > 0
	if m.Embeds > 0 && !requisites {
		return // nothing of it would be followed
	}
	var body []byte
	var err error
	if pre != nil {
		body, err = pre.body, pre.err
	} else {
		body, err = fetch.DecodeBody(resp, l.maxBody)
	}
	if err != nil {
		a.log.Info("decode body", "url", resp.URL, "err", err)
	}
	embeds := embedsFrom{via: resp.URL, m: m.Next(frontier.HopEmbed, via)}
	if requisites && parse.IsCSS(resp.Header, base.Path()) {
		res := parse.CSS(base, resp.Header, body, parse.Options{MaxLinks: l.maxLinks})
		st.StyleSheets.Add(1)
		if a.passResponse(filter.StageFollow, m, resp, duplicate, "") {
			embeds.css = true
			a.offerEmbeds(res, embeds)
		}
		return
	}
	if requisites && a.cfg.JSLiterals && parse.IsJS(resp.Header, base.Path()) {
		res := parse.JS(base, body, parse.Options{MaxLinks: l.maxLinks})
		if a.passResponse(filter.StageFollow, m, resp, duplicate, "") {
			a.offerEmbeds(res, embeds)
		}
		return
	}
	var res parse.Result
	switch {
	case pre != nil && pre.res != nil:
		res = *pre.res
	case !parse.IsHTML(resp.Header, body):
		return
	default:
		res = parse.HTML(base, resp.Header, body, a.pageOptions(nil, false))
	}
	st.Parsed.Add(1)
	if a.pages != nil && stored && resp.Truncated == "" && m.Embeds == 0 {
		mime, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
		a.pages.add(pageLine{URL: resp.URL, Title: res.Title, Status: resp.Status, Mime: strings.TrimSpace(mime), Seed: m.Depth == 0}, resp.Start)
	}
	st.LinksFound.Add(int64(len(res.Links)))
	st.LinksDropped.Add(int64(res.LinksDropped))
	follow := a.passResponse(filter.StageFollow, m, resp, duplicate, pre.languages())
	if res.NoFollow {
		st.NoFollow.Add(1)
		if follow {
			a.offerEmbeds(res, embeds) // requisites are part of the page, not links
		}
		return
	}
	if a.digests.seen(res.TextDigest) {
		// Same normalised text on the same host: a duplicate, whose links
		// are not followed (this also ends traps that only change counters);
		// its requisites are the original's.
		st.TextDuplicates.Add(1)
		return
	}
	if a.cfg.NearDupBits >= 0 && res.Shingles >= minShingles {
		if d, ok := a.digests.near(base.SchemeAuthority(), res.SimHash, a.cfg.NearDupBits); ok {
			// A near-duplicate is counted and logged; its links are still
			// followed, as BUbiNG stops only on exact digests: SimHash may
			// be wrong, and a page differing in a few words may link to
			// pages the original does not.
			st.NearDuplicates.Add(1)
			a.log.Info("near duplicate", "url", resp.URL, "distance", d)
		}
	}
	if !follow {
		return
	}
	a.offerEmbeds(res, embeds)
	if m.Embeds > 0 {
		st.EmbedLinksSkipped.Add(int64(len(res.Links)))
		return
	}
	a.offerLinks(res.Links, resp.URL, m.Link(via))
}

// embedsFrom says where the requisites of one document go: the document's
// URL (via), their Meta m (one embed hop more than the document's), and
// whether the document is a style sheet (which sets its limit: embedHops).
type embedsFrom struct {
	via string
	m   frontier.Meta
	css bool
}

// embedHops returns the limit on the embed hops of the requisites of a
// document (a style sheet when css), and the setting that sets it:
// --max-embed-hops for an HTML document, --max-css-hops (never fewer) for
// a style sheet, so that @import and url() chains are followed as deep as
// a browser goes within their own bound.
func (a *Agent) embedHops(css bool) (int, string) {
	if css && a.cfg.MaxCSSHops > a.cfg.MaxEmbedHops {
		return a.cfg.MaxCSSHops, "--max-css-hops"
	}
	return a.cfg.MaxEmbedHops, "--max-embed-hops"
}

// offerEmbeds enqueues the requisites of a parse result as e says or,
// when they are beyond the document's limit, counts and logs each as cut.
func (a *Agent) offerEmbeds(res parse.Result, e embedsFrom) {
	a.stats.EmbedsFound.Add(int64(len(res.Embeds)))
	a.stats.EmbedsDropped.Add(int64(res.EmbedsDropped))
	if len(res.Embeds) == 0 {
		return
	}
	limit, setting := a.embedHops(e.css)
	if int(e.m.Embeds) <= limit {
		a.offerLinks(res.Embeds, e.via, e.m)
		return
	}
	rule := setting + " " + strconv.Itoa(limit)
	for _, u := range res.Embeds {
		a.countRefusal(crawllog.ReasonEmbedHops)
		a.refuse(u.String(), e.via, e.m, crawllog.ReasonEmbedHops, rule)
	}
}

// DefaultNearDupDistance is the default --near-dup-distance: the largest
// Hamming distance between the SimHash fingerprints (2-word shingles) of
// two near-duplicate pages. On the synthetic web, pages that differ in up
// to five of 200 words are 1 to 12 bits apart and unrelated pages 24 or
// more (see the parse package's tests); unrelated fingerprints differ in
// 32 ± 4 bits, so 12 or fewer happens by chance about once in 2·10⁶ pairs,
// and each page is compared with only nearDupRecent others.
const DefaultNearDupDistance = 12

// Bounds of the near-duplicate index.
const (
	nearDupRecent = 32    // fingerprints kept per host (the most recent)
	nearDupHosts  = 16384 // hosts kept; beyond it an arbitrary host is forgotten
	minShingles   = 32    // pages with less text are not checked
)

// textDigests is the Bloom filter of page text digests (BUbiNG's digests)
// and the near-duplicate index: the SimHash fingerprints of the last
// nearDupRecent pages of each of at most nearDupHosts hosts (32 × 8 bytes
// a host: at most about 5 MiB).
type textDigests struct {
	mu sync.Mutex
	f  *bloom.Filter

	nmu    sync.Mutex
	recent map[string]*simRing
}

// simRing holds the last fingerprints of one host.
type simRing struct {
	fp   [nearDupRecent]uint64
	n    int // fingerprints held (≤ nearDupRecent)
	next int // where the next one goes
}

func newTextDigests() *textDigests {
	return &textDigests{f: bloom.New(textDigestsFirstStage, textDigestsRate), recent: make(map[string]*simRing)}
}

// near reports whether fp is within maxBits of one of the recent
// fingerprints of host, with the smallest distance found, and adds fp to
// them.
func (t *textDigests) near(host string, fp uint64, maxBits int) (int, bool) {
	t.nmu.Lock()
	defer t.nmu.Unlock()
	r := t.recent[host]
	if r == nil {
		if len(t.recent) >= nearDupHosts {
			for h := range t.recent {
				delete(t.recent, h)
				break
			}
		}
		r = new(simRing)
		t.recent[host] = r
	}
	best := 65
	for _, g := range r.fp[:r.n] {
		best = min(best, parse.Hamming(fp, g))
	}
	r.fp[r.next] = fp
	r.next = (r.next + 1) % nearDupRecent
	r.n = min(r.n+1, nearDupRecent)
	return best, best <= maxBits
}

// The text digest filter starts with room for 65536 pages (350 KiB) and
// grows by stages, its compound false-positive rate at most 1e-9 (a false
// positive stops following one page's links).
const (
	textDigestsFirstStage = 1 << 16
	textDigestsRate       = 1e-9
)

// stats returns the filter's figures.
func (t *textDigests) stats() bloom.Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.f.Stats()
}

// writeTo saves the filter (for a resumed crawl).
func (t *textDigests) writeTo(w io.Writer) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, err := t.f.WriteTo(w)
	return err
}

// readFrom loads a filter saved by writeTo.
func (t *textDigests) readFrom(r io.Reader) error {
	f, err := bloom.ReadFrom(r)
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.f = f
	t.mu.Unlock()
	return nil
}

// seen reports whether d was added before, and adds it.
func (t *textDigests) seen(d [16]byte) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.f.TestAndAdd(d[:])
}
