package parse

import (
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

// Bounds of one sitemap file, as the sitemaps protocol sets them.
const (
	MaxSitemapURLs  = 50_000   // <loc> entries read from one file
	MaxSitemapBytes = 50 << 20 // bytes of one file, uncompressed
)

// SitemapResult is what one sitemap or sitemap index file holds.
type SitemapResult struct {
	Index   bool       // the file is a sitemap index: URLs are sitemaps
	URLs    []urlx.URL // the <loc> of each <url> (or <sitemap> of an index), resolved, in order, at most MaxSitemapURLs
	Bad     int        // <loc> values that are not http(s) URLs
	Dropped int        // entries beyond MaxSitemapURLs
	// Oversized: the file (uncompressed) is longer than MaxSitemapBytes;
	// what came before the cut was read.
	Oversized bool
	// Err says why the file is malformed (not XML, not a sitemap, cut
	// short); the URLs before the fault are kept. nil for a sound file.
	Err error
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

// readSitemap walks the XML tokens: the root decides the kind, and the
// text of each <loc> inside a <url> (or <sitemap>) is an entry.
func readSitemap(d *xml.Decoder, base urlx.URL, res *SitemapResult) error {
	depth, root := 0, false
	inEntry, inLoc := false, false
	entry := "url"
	var loc strings.Builder
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
				inEntry = true
			case depth == 3 && inEntry && name == "loc":
				inLoc = true
				loc.Reset()
			}
		case xml.CharData:
			if inLoc && loc.Len() < urlx.MaxLength+1 {
				loc.Write(t)
			}
		case xml.EndElement:
			switch {
			case depth == 3 && inLoc:
				inLoc = false
				res.add(base, strings.TrimSpace(loc.String()))
			case depth == 2:
				inEntry = false
			}
			depth--
		}
	}
}

// add records the entry loc.
func (res *SitemapResult) add(base urlx.URL, loc string) {
	if len(res.URLs) >= MaxSitemapURLs {
		res.Dropped++
		return
	}
	u, err := base.Resolve(loc)
	if err != nil || loc == "" {
		res.Bad++
		return
	}
	res.URLs = append(res.URLs, u)
}
