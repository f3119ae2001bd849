package agent

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/petrel-crawler/petrel/internal/crawllog"
	"github.com/petrel-crawler/petrel/internal/filter"
	"github.com/petrel-crawler/petrel/internal/frontier"
)

// TestSitemaps crawls a host whose robots.txt names a sitemap index of a
// plain, a gzipped, a malformed, an oversized sitemap and a nested index,
// and whose /sitemap.xml lists a page: with --sitemaps every listed page in
// scope is fetched once, the nested index is not followed, the malformed
// and oversized files are counted and the crawl goes on; without it only
// the seed is.
func TestSitemaps(t *testing.T) {
	ln, err := net.Listen("tcp", "127.91.3.1:0")
	if err != nil {
		t.Fatal(err)
	}
	origin := fmt.Sprintf("http://sm.test:%d", ln.Addr().(*net.TCPAddr).Port)
	urlset := func(locs ...string) []byte {
		var b bytes.Buffer
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
		for _, l := range locs {
			fmt.Fprintf(&b, "<url><loc>%s</loc></url>\n", l)
		}
		b.WriteString("</urlset>")
		return b.Bytes()
	}
	gzipped := func(b []byte) []byte {
		var out bytes.Buffer
		zw := gzip.NewWriter(&out)
		zw.Write(b)
		zw.Close()
		return out.Bytes()
	}
	var big []string
	for i := range 50_001 {
		big = append(big, fmt.Sprintf("http://elsewhere.test/%d", i))
	}
	files := map[string][]byte{
		"/robots.txt":  []byte("User-agent: *\nDisallow: /private/\nSitemap: " + origin + "/index.xml\n"),
		"/":            []byte("<title>home</title>"),
		"/sitemap.xml": urlset(origin + "/from-default.html"),
		"/index.xml": []byte(`<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
			`<sitemap><loc>` + origin + `/s-plain.xml</loc></sitemap><sitemap><loc>` + origin + `/s-gz.xml.gz</loc></sitemap>` +
			`<sitemap><loc>` + origin + `/s-bad.xml</loc></sitemap><sitemap><loc>` + origin + `/nested-index.xml</loc></sitemap>` +
			`<sitemap><loc>` + origin + `/s-big.xml.gz</loc></sitemap></sitemapindex>`),
		"/s-plain.xml":      urlset(origin+"/p1.html", origin+"/p2.html", origin+"/private/no.html", "http://elsewhere.test/x"),
		"/s-gz.xml.gz":      gzipped(urlset(origin + "/g1.html")),
		"/s-bad.xml":        []byte(`<urlset><url><loc>` + origin + `/b1.html</loc></url><url><loc>broken</url></urlset>`),
		"/nested-index.xml": []byte(`<sitemapindex><sitemap><loc>` + origin + `/never.xml</loc></sitemap></sitemapindex>`),
		"/s-big.xml.gz":     gzipped(urlset(big...)),
	}
	var mu sync.Mutex
	var hits []string
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, r.URL.Path)
		mu.Unlock()
		b, ok := files[r.URL.Path]
		switch {
		case !ok && strings.HasSuffix(r.URL.Path, ".html"):
			b = []byte("<title>page</title>")
		case !ok:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", map[bool]string{true: "application/gzip", false: "text/html"}[strings.HasSuffix(r.URL.Path, ".gz")])
		w.Write(b)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	dir := t.TempDir()
	hosts := filepath.Join(dir, "hosts")
	if err := os.WriteFile(hosts, []byte("127.91.3.1 sm.test\n127.91.3.2 elsewhere.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	crawl := func(name string, sitemaps bool) (*Agent, []string) {
		mu.Lock()
		hits = nil
		mu.Unlock()
		a := smallCrawl(t, filepath.Join(dir, name), hosts, origin+"/", func(cfg *Config) {
			cfg.Filter.Scope = filter.ScopeHost
			cfg.Sitemaps = sitemaps
		})
		mu.Lock()
		defer mu.Unlock()
		got := append([]string(nil), hits...)
		sort.Strings(got)
		return a, got
	}

	a, got := crawl("on", true)
	want := []string{"/", "/b1.html", "/from-default.html", "/g1.html", "/index.xml", "/nested-index.xml", "/p1.html", "/p2.html",
		"/robots.txt", "/s-bad.xml", "/s-big.xml.gz", "/s-gz.xml.gz", "/s-plain.xml", "/sitemap.xml"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("requests\n%q\nwant\n%q", got, want)
	}
	st := a.stats
	if st.SitemapsRead.Load() != 7 || st.SitemapsMalformed.Load() != 1 || st.SitemapsOversized.Load() != 1 ||
		st.SitemapsNested.Load() != 1 || st.SitemapURLs.Load() != 1+4+1+1+50_000 {
		t.Errorf("read %d malformed %d oversized %d nested %d URLs %d", st.SitemapsRead.Load(), st.SitemapsMalformed.Load(),
			st.SitemapsOversized.Load(), st.SitemapsNested.Load(), st.SitemapURLs.Load())
	}
	if st.CutSitemapNested.Load() != 1 {
		t.Errorf("CutSitemapNested %d, want 1 (/never.xml of the nested index)", st.CutSitemapNested.Load())
	}
	var logged []crawllog.Skip
	for _, s := range readSkipped(t, a.cfg.Dir) {
		if s.Reason == crawllog.ReasonSitemapNested {
			logged = append(logged, s)
		}
	}
	if len(logged) != 1 || logged[0].URL != origin+"/never.xml" || logged[0].Via != origin+"/nested-index.xml" {
		t.Errorf("skipped.jsonl's sitemap-nested lines: %+v", logged)
	}
	if w, err := WhyDir(a.cfg.Dir, origin+"/never.xml"); err != nil || w.Rule != string(crawllog.ReasonSitemapNested) {
		t.Errorf("why of the nested index's sitemap: %v %+v", err, w)
	}
	if st.OutOfScope.Load() < 50_000 || st.RobotsDenied.Load() != 1 {
		t.Errorf("out of scope %d, robots-denied %d: sitemap URLs must pass the scope and robots.txt", st.OutOfScope.Load(), st.RobotsDenied.Load())
	}
	if _, got := crawl("off", false); strings.Join(got, " ") != "/ /robots.txt" {
		t.Errorf("without --sitemaps: %q", got)
	}
}

// TestSitemapLevelInRecord checks that a sitemap's mark and level are in
// its queue record (the format of the ready queue, the visit states'
// queues and checkpoints), so that a sitemap queued at a stop is read as
// one after the resume, and that the pages a sitemap lists are not.
func TestSitemapLevelInRecord(t *testing.T) {
	robots := frontier.Meta{Seed: 1}.Link(1).Next(frontier.HopPrerequisite, 2)
	for _, c := range []struct {
		name    string
		m       frontier.Meta
		level   uint8
		sitemap bool
	}{
		{"page", frontier.Meta{Seed: 1}.Link(1), 0, false},
		{"robots.txt's sitemap", robots.Next(frontier.HopManifest, 3), 0, true},
		{"its redirect", robots.Next(frontier.HopManifest, 3).Redirect(4), 0, true},
		{"index's sitemap", robots.Next(frontier.HopManifest, 3).Next(frontier.HopManifest, 5), 1, true},
		{"a listed page", robots.Next(frontier.HopManifest, 3).Link(6), 0, false},
	} {
		m, _, err := frontier.SplitRecord(frontier.AppendRecord(nil, c.m, "http://sm.test/x.xml"))
		if err != nil {
			t.Fatal(err)
		}
		if level, ok := sitemapLevel(m); ok != c.sitemap || level != c.level {
			t.Errorf("%s (%s): sitemap %v level %d, want %v %d", c.name, m.Path, ok, level, c.sitemap, c.level)
		}
	}
}
