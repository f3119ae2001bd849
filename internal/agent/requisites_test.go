package agent

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/console"
	"github.com/petrel-crawler/petrel/internal/crawllog"
	"github.com/petrel-crawler/petrel/internal/filter"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestRequisites crawls the requisites site (every form of page requisite,
// a chain of five style sheets importing one another down to an image, a
// CDN off the scope, an HTML document embedded with <object>, a redirected
// image, a robots-disallowed one) and checks, from the server's request
// log, that every requisite the settings allow is fetched exactly once and
// nothing else is, that each URL's hop path is right, that each requisite
// the embed hop limits cut is counted, in skipped.jsonl with the document
// naming it and answered by why, and that the politeness delay held
// between the requests to each host, requisites included. With the
// defaults the whole style sheet chain is fetched.
func TestRequisites(t *testing.T) {
	d := Defaults()
	for _, tc := range []struct {
		name     string
		hops     int
		cssHops  int
		offScope bool
		ip       string
	}{
		{"default", d.MaxEmbedHops, d.MaxCSSHops, d.EmbedsOffScope, "127.91.0.1"},
		{"max-embed-hops=3", 3, d.MaxCSSHops, true, "127.91.0.11"},
		{"max-embed-hops=1", 1, d.MaxCSSHops, true, "127.91.0.21"},
		{"max-embed-hops=0", 0, d.MaxCSSHops, true, "127.91.0.31"},
		{"embeds-off-scope=false", 2, d.MaxCSSHops, false, "127.91.0.41"},
		{"max-css-hops=3", 2, 3, true, "127.91.0.51"},
		{"max-css-hops=0", 2, 0, true, "127.91.0.61"},
	} {
		t.Run(tc.name, func(t *testing.T) { crawlRequisites(t, tc.ip, tc.hops, tc.cssHops, tc.offScope) })
	}
}

func crawlRequisites(t *testing.T, ip string, maxHops, cssHops int, offScope bool) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := testweb.StartRequisites(ctx, netip.MustParseAddr(ip))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	dir := t.TempDir()
	hostsFile, seeds, err := w.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	const hostDelay = 20 * time.Millisecond
	cfg := Defaults()
	cfg.Dir = filepath.Join(dir, "crawl")
	cfg.Fetch.HostsFile, cfg.SeedsFile = hostsFile, seeds
	cfg.Fetch.AllowPrivate, cfg.Fetch.SystemDNS = true, false
	cfg.Frontier.HostDelay, cfg.Frontier.IPDelay = hostDelay, time.Millisecond
	cfg.Fetchers, cfg.Parsers = 8, 2
	cfg.Filter.Scope = filter.ScopeHost
	cfg.MaxEmbedHops, cfg.MaxCSSHops, cfg.EmbedsOffScope = maxHops, cssHops, offScope
	cfg.CheckpointEvery = 0
	cfg.Frontier.WorkbenchBytes, cfg.Sieve.URLCacheBytes, cfg.Sieve.BufferKeys = 16<<20, 1<<20, 1<<12
	a, err := Open(cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	hops := map[string]string{}
	a.observe = func(url string, m frontier.Meta) {
		mu.Lock()
		hops[url] += m.Path.String() + ";"
		mu.Unlock()
	}
	runCtx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	if err := a.Run(runCtx); err != nil {
		t.Fatalf("Run: %v", err)
	}

	want := w.Expected(maxHops, cssHops, offScope)
	site, cdn := w.Origins()
	fetched := map[string]int{}
	byHost := map[string][]testweb.Hit{}
	for _, h := range w.Hits() {
		byHost[h.Host] = append(byHost[h.Host], h)
		if h.Path == "/robots.txt" {
			continue
		}
		o := site
		if h.Host == "cdn.req.test" {
			o = cdn
		} else if h.Host != "www.req.test" {
			o = "http://" + h.Host
		}
		fetched[o+h.Path]++
	}
	for u, path := range want {
		if fetched[u] != 1 {
			t.Errorf("%s (hops %q) fetched %d times, want 1", u, path, fetched[u])
		}
		if got := hops[u]; got != path+";" {
			t.Errorf("%s: hop path %q, want %q", u, got, path)
		}
	}
	for u, n := range fetched {
		if _, ok := want[u]; !ok {
			t.Errorf("%s fetched %d times, not expected", u, n)
		}
	}
	if pages := len(w.Pages()); maxHops == 0 && len(want) != pages || maxHops > 0 && len(want) < 10*pages {
		t.Fatalf("%d expected URLs for %d pages", len(want), pages)
	}
	for host, hs := range byHost {
		sort.Slice(hs, func(i, j int) bool { return hs[i].Start.Before(hs[j].Start) })
		for i := 1; i < len(hs); i++ {
			if gap := hs[i].Start.Sub(hs[i-1].End); gap < hostDelay-5*time.Millisecond {
				t.Errorf("%s: %s then %s only %v apart (host delay %v)", host, hs[i-1].Path, hs[i].Path, gap, hostDelay)
			}
		}
	}
	st := a.stats
	if maxHops > 0 && st.EmbedsFound.Load() == 0 || maxHops > 1 && st.StyleSheets.Load() == 0 {
		t.Errorf("EmbedsFound %d, StyleSheets %d", st.EmbedsFound.Load(), st.StyleSheets.Load())
	}
	if maxHops >= 1 && st.EmbedLinksSkipped.Load() != 1 {
		t.Errorf("EmbedLinksSkipped %d, want 1 (the link of /embed/inner.html)", st.EmbedLinksSkipped.Load())
	}
	checkCut(t, cfg.Dir, w.Cut(maxHops, cssHops, offScope), st.CutEmbedHops.Load(), maxHops, cssHops)
}

// checkCut checks that the requisites cut by the embed hop limits (URL →
// the document naming it) are counted, logged to skipped.jsonl with their
// document and the setting that cut them, and explained by why.
func checkCut(t *testing.T, dir string, cut map[string]string, counted int64, maxHops, cssHops int) {
	t.Helper()
	if counted != int64(len(cut)) {
		t.Errorf("CutEmbedHops %d, want %d (%v)", counted, len(cut), cut)
	}
	logged := map[string]crawllog.Skip{}
	for _, s := range readSkipped(t, dir) {
		if s.Reason == crawllog.ReasonEmbedHops {
			logged[s.URL] = s
		}
	}
	for u, via := range cut {
		rule := fmt.Sprintf("--max-embed-hops %d", maxHops)
		if strings.HasSuffix(via, ".css") && cssHops > maxHops {
			rule = fmt.Sprintf("--max-css-hops %d", cssHops)
		}
		s, ok := logged[u]
		if !ok || s.Via != via || s.Rule != rule || s.Status != crawllog.StatusTooManyEmbedHops {
			t.Errorf("%s (named by %s, cut by %s): skipped.jsonl has %+v", u, via, rule, s)
		}
		w, err := WhyDir(dir, u)
		if err != nil || w.State != console.WhyRefused || w.Rule != string(crawllog.ReasonEmbedHops) {
			t.Errorf("why %s: %v %+v", u, err, w)
		}
	}
	if len(cut) == 0 && (maxHops == 1 || cssHops < 10) {
		t.Errorf("the site has nothing that --max-embed-hops %d --max-css-hops %d cuts", maxHops, cssHops)
	}
	if len(logged) != len(cut) {
		t.Errorf("skipped.jsonl has %d embed-hops lines, want %d", len(logged), len(cut))
	}
}
