package agent

import (
	"sync"

	"github.com/petrel-crawler/petrel/internal/fetch"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/parse"
	"github.com/petrel-crawler/petrel/internal/sieve"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// Sitemaps (--sitemaps): the Sitemap lines of every robots.txt and the
// /sitemap.xml of each seed's host are enqueued as sitemaps (L hops, through
// the scope, filters and sieve like any URL); a fetched sitemap is read
// (parse.Sitemap: plain or gzipped, bounded) and its URLs offered as links
// of it. A sitemap index's sitemaps are followed one level deep: an index
// named by an index is counted and not followed. A malformed sitemap is
// counted and logged, and the crawl goes on.
//
// The agent remembers which URLs it enqueued as sitemaps (sitemapSet), at
// most maxSitemaps at once; the set is not saved, so a sitemap still queued
// when a crawl stops is fetched after a resume but not read as one.

// maxSitemaps bounds the sitemap URLs remembered at once; more are counted
// and not enqueued.
const maxSitemaps = 100_000

// sitemapSet is the URLs enqueued as sitemaps and their level (0: from
// robots.txt or a seed's host, 1: from a sitemap index). Safe for
// concurrent use.
type sitemapSet struct {
	mu    sync.Mutex
	level map[string]uint8
}

// add remembers u as a sitemap of level, unless the set is full.
func (s *sitemapSet) add(u string, level uint8) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.level == nil {
		s.level = make(map[string]uint8)
	}
	if _, ok := s.level[u]; !ok && len(s.level) >= maxSitemaps {
		return false
	}
	s.level[u] = level
	return true
}

// take forgets u and returns its level, if it was a sitemap.
func (s *sitemapSet) take(u string) (uint8, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.level[u]
	delete(s.level, u)
	return l, ok
}

// offerSitemap enqueues u, found on via, as a sitemap of level with Meta m.
func (a *Agent) offerSitemap(u urlx.URL, via string, m frontier.Meta, level uint8) {
	if !a.admit(u, via, m) {
		return
	}
	if !a.sitemaps.add(u.String(), level) {
		a.stats.SitemapsDropped.Add(1)
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
			a.offerSitemap(u, s.String(), m.Link(sieve.Hash([]byte(s.String()))), 0)
		}
	}
}

// robotsSitemaps enqueues the Sitemap lines of a robots.txt response.
func (a *Agent) robotsSitemaps(base urlx.URL, resp *fetch.Response, m frontier.Meta, via uint64) {
	body, _ := fetch.DecodeBody(resp, fetch.MaxRobotsSize)
	for _, s := range fetch.ParseRobots(body, a.productToken()).Sitemaps() {
		if u, err := base.Resolve(s); err == nil {
			a.offerSitemap(u, resp.URL, m.Link(via), 0)
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
			return
		}
		for _, u := range res.URLs {
			a.offerSitemap(u, resp.URL, m.Link(via), level+1)
		}
		return
	}
	st.SitemapURLs.Add(int64(len(res.URLs)))
	a.offerLinks(res.URLs, resp.URL, m.Link(via))
}
