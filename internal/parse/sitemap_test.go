package parse

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"strings"
	"testing"
	"time"
)

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Write(b)
	zw.Close()
	return out.Bytes()
}

func TestSitemap(t *testing.T) {
	base := mustURL(t, "http://www.example.com/sitemap.xml")
	plain := []byte(`<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>http://www.example.com/a.html</loc><lastmod>2024-01-01</lastmod></url>
  <url><loc>
     http://www.example.com/b?x=1&amp;y=2
  </loc></url>
  <url><loc>javascript:alert(1)</loc></url>
  <url><loc>/relative.html</loc></url>
  <image><loc>http://www.example.com/not-an-entry</loc></image>
</urlset>`)
	for name, body := range map[string][]byte{"plain": plain, "gzipped": gz(t, plain)} {
		r := Sitemap(base, body)
		got := linkStrings(r.URLs)
		want := []string{"http://www.example.com/a.html", "http://www.example.com/b?x=1&y=2", "http://www.example.com/relative.html"}
		if r.Err != nil || r.Index || r.Bad != 1 || strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: %q index %v bad %d err %v", name, got, r.Index, r.Bad, r.Err)
		}
	}
	index := []byte(`<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>http://www.example.com/s1.xml.gz</loc></sitemap><sitemap><loc>http://www.example.com/s2.xml</loc></sitemap></sitemapindex>`)
	r := Sitemap(base, index)
	if !r.Index || len(r.URLs) != 2 || r.Err != nil {
		t.Errorf("index: %q index %v err %v", linkStrings(r.URLs), r.Index, r.Err)
	}
	for name, body := range map[string]string{
		"html":      "<html><body>not found</body></html>",
		"not xml":   "just text",
		"cut short": `<urlset><url><loc>http://www.example.com/kept</loc></url><url><loc>http://www.exa`,
		"bad xml":   `<urlset><url><loc>http://www.example.com/kept</loc></url></url></urlset>`,
		"bad gzip":  "\x1f\x8bnot gzip at all",
		"charset":   `<?xml version="1.0" encoding="ISO-8859-1"?><urlset></urlset>`,
	} {
		r := Sitemap(base, []byte(body))
		if r.Err == nil {
			t.Errorf("%s: no error", name)
		}
		if strings.Contains(body, "/kept") && len(r.URLs) != 1 {
			t.Errorf("%s: %d URLs kept before the fault, want 1", name, len(r.URLs))
		}
	}
	// Oversized: more entries than the protocol allows, and more bytes.
	var big bytes.Buffer
	big.WriteString("<urlset>")
	for i := range MaxSitemapURLs + 10 {
		fmt.Fprintf(&big, "<url><loc>http://www.example.com/%d</loc></url>\n", i)
	}
	big.WriteString("</urlset>")
	r = Sitemap(base, gz(t, big.Bytes()))
	if len(r.URLs) != MaxSitemapURLs || r.Dropped != 10 || r.Err != nil || r.Oversized {
		t.Errorf("50,010 entries: %d kept, %d dropped, err %v, oversized %v", len(r.URLs), r.Dropped, r.Err, r.Oversized)
	}
	// The byte bound, scaled down (50 MiB under the race detector is slow).
	huge := append([]byte("<urlset><url><loc>http://www.example.com/first</loc></url><!-- "), bytes.Repeat([]byte("x"), 1<<20)...)
	r = sitemap(base, gz(t, huge), 1<<20)
	if !r.Oversized || len(r.URLs) != 1 || r.Err != nil {
		t.Errorf("over 50 MiB: oversized %v, %d URLs, err %v", r.Oversized, len(r.URLs), r.Err)
	}
}

// TestSitemapHints: <changefreq> and <lastmod> of each <url>, in any
// order beside its <loc>, in W3C Datetime's forms; an unknown value is
// no hint; a file without either has no Hints.
func TestSitemapHints(t *testing.T) {
	base := mustURL(t, "http://www.example.com/sitemap.xml")
	r := Sitemap(base, []byte(`<urlset>
  <url><lastmod>2024-03-05T10:20:30+02:00</lastmod><loc>/a</loc><changefreq>Daily</changefreq></url>
  <url><loc>/b</loc></url>
  <url><loc>/c</loc><changefreq>sometimes</changefreq><lastmod>2024-13-45</lastmod></url>
  <url><loc>/d</loc><lastmod>2024-03</lastmod><changefreq>never</changefreq></url>
</urlset>`))
	want := []SitemapHint{
		{Period: 24 * time.Hour, LastMod: time.Date(2024, 3, 5, 8, 20, 30, 0, time.UTC)},
		{}, {},
		{Period: 100 * 365 * 24 * time.Hour, LastMod: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
	}
	if r.Err != nil || len(r.URLs) != 4 || len(r.Hints) != 4 {
		t.Fatalf("%d URLs, %d hints, err %v", len(r.URLs), len(r.Hints), r.Err)
	}
	for i, w := range want {
		if g := r.Hints[i]; g.Period != w.Period || !g.LastMod.Equal(w.LastMod) {
			t.Errorf("%s: %+v, want %+v", r.URLs[i], g, w)
		}
	}
	if r := Sitemap(base, []byte(`<urlset><url><loc>/a</loc></url></urlset>`)); r.Hints != nil || len(r.URLs) != 1 {
		t.Errorf("no hints: %+v", r)
	}
}
