package parse

import (
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

// Bounds of one sitemap file, as the sitemaps protocol sets them.
const (
	MaxSitemapURLs  = 50_000   // <loc> entries read from one file
	MaxSitemapBytes = 50 << 20 // bytes of one file, uncompressed
)

// SitemapResult is what one sitemap or sitemap index file holds.
type SitemapResult struct {
	Index bool       // the file is a sitemap index: URLs are sitemaps
	URLs  []urlx.URL // the <loc> of each <url> (or <sitemap> of an index), resolved, in order, at most MaxSitemapURLs
	// Hints, nil when no <url> has a <changefreq> or a <lastmod> that
	// reads, is parallel to URLs: what the file says of each.
	Hints   []SitemapHint
	Bad     int // <loc> values that are not http(s) URLs
	Dropped int // entries beyond MaxSitemapURLs
	// Oversized: the file (uncompressed) is longer than MaxSitemapBytes;
	// what came before the cut was read.
	Oversized bool
	// Err says why the file is malformed (not XML, not a sitemap, cut
	// short); the URLs before the fault are kept. nil for a sound file.
	Err error
}

// SitemapHint is what a sitemap's <url> says of its page: how often it
// changes (<changefreq> as a period; 0 none or unknown) and when it last
// changed (<lastmod>, W3C Datetime; zero none or unreadable).
type SitemapHint struct {
	Period  time.Duration
	LastMod time.Time
}

// changeFreqs are the periods of the sitemaps protocol's <changefreq>
// values; "never" (archived) is a century.
var changeFreqs = map[string]time.Duration{
	"always": time.Minute, "hourly": time.Hour, "daily": 24 * time.Hour, "weekly": 7 * 24 * time.Hour,
	"monthly": 30 * 24 * time.Hour, "yearly": 365 * 24 * time.Hour, "never": 100 * 365 * 24 * time.Hour,
}

// lastModLayouts are the W3C Datetime forms <lastmod> takes.
var lastModLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02", "2006-01", "2006"}

// parseLastMod reads a <lastmod> value (zero when it does not read).
func parseLastMod(v string) time.Time {
	for _, l := range lastModLayouts {
		if t, err := time.Parse(l, v); err == nil {
			return t
		}
	}
	return time.Time{}
}

// ErrNotSitemap is the Err of a file whose root element is neither
// <urlset> nor <sitemapindex>.
var ErrNotSitemap = errors.New("not a sitemap: the root element is neither urlset nor sitemapindex")

// Sitemap reads a sitemap or sitemap index fetched from base (its body,
// content-coding undone): XML, plain or gzipped (recognised by its magic
// bytes). It reads at most MaxSitemapBytes of XML and MaxSitemapURLs
// entries, and never fails: a malformed file gives the URLs read before the
// fault and the fault in Err.
func Sitemap(base urlx.URL, body []byte) SitemapResult {
	return sitemap(base, body, MaxSitemapBytes)
}

// sitemap is Sitemap reading at most maxBytes of XML.
func sitemap(base urlx.URL, body []byte, maxBytes int64) SitemapResult {
	var res SitemapResult
	var r io.Reader = bytes.NewReader(body)
	if len(body) >= 2 && body[0] == 0x1f && body[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			res.Err = fmt.Errorf("sitemap: gzip: %w", err)
			return res
		}
		defer zr.Close()
		r = zr
	}
	lr := &io.LimitedReader{R: r, N: maxBytes + 1}
	d := xml.NewDecoder(lr)
	d.CharsetReader = func(label string, in io.Reader) (io.Reader, error) {
		if l := strings.ToLower(label); l == "utf-8" || l == "us-ascii" || l == "ascii" {
			return in, nil
		}
		return nil, fmt.Errorf("sitemap: encoding %q (sitemaps are UTF-8)", label)
	}
	res.Err = readSitemap(d, base, &res)
	if lr.N <= 0 {
		res.Oversized = true
		res.Err = nil // cut by the bound, not malformed
	}
	return res
}

// readSitemap walks the XML tokens: the root decides the kind; each
// <url> (or <sitemap>) is an entry, its <loc> text the URL, its
// <changefreq> and <lastmod> the hint.
func readSitemap(d *xml.Decoder, base urlx.URL, res *SitemapResult) error {
	depth, root, inEntry := 0, false, false
	entry, field := "url", ""
	var text strings.Builder
	var loc string
	var hint SitemapHint
	for {
		tok, err := d.Token()
		if err == io.EOF {
			switch {
			case !root:
				return errors.New("sitemap: no root element")
			case depth != 0:
				return errors.New("sitemap: cut short (unclosed elements)")
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("sitemap: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			name := t.Name.Local
			switch {
			case depth == 1:
				root = true
				switch name {
				case "urlset":
				case "sitemapindex":
					res.Index, entry = true, "sitemap"
				default:
					return ErrNotSitemap
				}
			case depth == 2 && name == entry:
				inEntry, loc, hint = true, "", SitemapHint{}
			case depth == 3 && inEntry && (name == "loc" || name == "changefreq" || name == "lastmod"):
				field = name
				text.Reset()
			}
		case xml.CharData:
			if field != "" && text.Len() < urlx.MaxLength+1 {
				text.Write(t)
			}
		case xml.EndElement:
			switch {
			case depth == 3 && field != "":
				entryField(field, strings.TrimSpace(text.String()), &loc, &hint)
				field = ""
			case depth == 2 && inEntry:
				inEntry = false
				res.add(base, loc, hint)
			}
			depth--
		}
	}
}

// entryField sets the field of an entry named name to v.
func entryField(name, v string, loc *string, hint *SitemapHint) {
	switch name {
	case "loc":
		*loc = v
	case "changefreq":
		hint.Period = changeFreqs[strings.ToLower(v)]
	case "lastmod":
		hint.LastMod = parseLastMod(v)
	}
}

// add records the entry loc with its hint.
func (res *SitemapResult) add(base urlx.URL, loc string, h SitemapHint) {
	if len(res.URLs) >= MaxSitemapURLs {
		res.Dropped++
		return
	}
	u, err := base.Resolve(loc)
	if err != nil || loc == "" {
		res.Bad++
		return
	}
	if (h != SitemapHint{}) && res.Hints == nil {
		res.Hints = make([]SitemapHint, len(res.URLs), cap(res.URLs)+1)
	}
	res.URLs = append(res.URLs, u)
	if res.Hints != nil {
		res.Hints = append(res.Hints, h)
	}
}
