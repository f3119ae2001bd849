package agent

import (
	"github.com/petrel-crawler/petrel/internal/crawllog"
	"github.com/petrel-crawler/petrel/internal/fetch"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/parse"
	"github.com/petrel-crawler/petrel/internal/robots"
	"github.com/petrel-crawler/petrel/internal/sieve"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// Sitemaps (--sitemaps): the Sitemap lines of every robots.txt and the
// /sitemap.xml of each seed's host are enqueued as sitemaps (M hops, through
// the scope, filters and sieve like any URL); a fetched sitemap is read
// (parse.Sitemap: plain or gzipped, bounded) and its URLs offered as links
// of it. A sitemap index's sitemaps are followed one level deep: an index
// named by an index is counted and not followed (each sitemap it names
// counted and logged as cut). A malformed sitemap is
// counted and logged, and the crawl goes on.
//
// A URL is a sitemap when its hop path ends in manifest hops (M, redirects
// among them allowed), and its level is how many, less one: the mark travels with the
// URL through the queues, checkpoints and a resume, so a sitemap still
// queued when a crawl stops is read as one when it is fetched after the
// resume.

// sitemapLevel returns the level of the sitemap with Meta m (0: named by a
// robots.txt or a seed's host, 1: by a sitemap index) and whether m's URL
// is a sitemap at all.
func sitemapLevel(m frontier.Meta) (uint8, bool) {
	n := m.Path.Manifests()
	if n == 0 {
		return 0, false
	}
	return uint8(min(n-1, 255)), true
}

// offerSitemap enqueues u, found on via, as a sitemap with Meta m (whose
// last hop is a manifest hop).
func (a *Agent) offerSitemap(u urlx.URL, via string, m frontier.Meta) {
	if !a.admit(u, via, m) {
		return
	}
	if err := a.frontier.Enqueue(u, m); err != nil {
		a.log.Error("enqueue", "url", u.String(), "err", err)
	}
}

// seedSitemaps enqueues the /sitemap.xml of each seed's host.
func (a *Agent) seedSitemaps(seeds []urlx.URL) {
	done := map[string]bool{}
	for i, s := range seeds {
		sa := s.SchemeAuthority()
		if done[sa] {
			continue
		}
		done[sa] = true
		if u, err := s.Resolve("/sitemap.xml"); err == nil {
			m := frontier.Meta{Seed: uint32(min(i+1, 1<<32-1))}
			a.offerSitemap(u, s.String(), m.Next(frontier.HopManifest, sieve.Hash([]byte(s.String()))))
		}
	}
}

// robotsSitemaps enqueues the Sitemap lines of a robots.txt response.
func (a *Agent) robotsSitemaps(base urlx.URL, resp *fetch.Response, m frontier.Meta, via uint64) {
	body, _ := fetch.DecodeBody(resp, robots.MaxSize)
	for _, s := range robots.Parse(body, a.productToken()).Sitemaps() {
		if u, err := base.Resolve(s); err == nil {
			a.offerSitemap(u, resp.URL, m.Next(frontier.HopManifest, via))
		}
	}
}

// readSitemap reads the fetched sitemap of level (resp, 2xx) and offers
// what it lists.
func (a *Agent) readSitemap(base urlx.URL, resp *fetch.Response, m frontier.Meta, via uint64, level uint8) {
	st := a.stats
	body, err := fetch.DecodeBody(resp, parse.MaxSitemapBytes)
	if err != nil {
		a.log.Info("decode body", "url", resp.URL, "err", err)
	}
	res := parse.Sitemap(base, body)
	st.SitemapsRead.Add(1)
	switch {
	case res.Oversized || res.Dropped > 0 || resp.Truncated == fetch.TruncatedLength:
		st.SitemapsOversized.Add(1)
		a.log.Info("sitemap over its bounds", "url", resp.URL, "entries", len(res.URLs), "dropped", res.Dropped,
			"truncated", resp.Truncated)
	case res.Err != nil:
		st.SitemapsMalformed.Add(1)
		a.log.Info("sitemap malformed", "url", resp.URL, "entries", len(res.URLs), "err", res.Err)
	}
	if res.Index {
		if level > 0 {
			st.SitemapsNested.Add(1)
			a.log.Info("sitemap index in a sitemap index not followed", "url", resp.URL)
			next := m.Next(frontier.HopManifest, via)
			for _, u := range res.URLs {
				a.countRefusal(crawllog.ReasonSitemapNested)
				a.refuse(u.String(), resp.URL, next, crawllog.ReasonSitemapNested, "sitemap indexes are followed one level deep")
			}
			return
		}
		for _, u := range res.URLs {
			a.offerSitemap(u, resp.URL, m.Next(frontier.HopManifest, via))
		}
		return
	}
	st.SitemapURLs.Add(int64(len(res.URLs)))
	a.hintRevisits(res) // revisits.go
	a.offerLinks(res.URLs, resp.URL, m.Link(via))
}
