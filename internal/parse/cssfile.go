package parse

import (
	"bytes"
	"mime"
	"net/http"
	"strings"

	"golang.org/x/net/html/charset"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

// CSS extracts the requisites of a style sheet fetched from base with
// response header header: the URLs of its url() values and @import rules,
// resolved against base (the style sheet's own URL), into Result.Embeds
// (capped at Options.MaxLinks; Options.Embeds is implied). Only Embeds,
// EmbedsDropped, BadEmbeds and Charset are set.
//
// The encoding is CSS Syntax's: byte order mark, then the charset of the
// Content-Type, then an @charset rule at the very start, else UTF-8. URLs in
// a style sheet are always resolved as UTF-8 (the URL standard's rule for
// CSS), whatever the sheet's encoding. CSS never fails.
func CSS(base urlx.URL, header http.Header, body []byte, opts Options) Result {
	var x extractor
	x.base, x.maxLinks, x.embeds = base, opts.MaxLinks, true
	if x.maxLinks <= 0 {
		x.maxLinks = DefaultMaxLinks
	}
	text, name := decodeCSS(header.Get("Content-Type"), body)
	x.res.Charset = name
	x.styleSheet(text)
	x.res.Embeds, x.res.EmbedsDropped = x.reqs.urls, x.reqs.dropped
	return x.res
}

// decodeCSS returns the style sheet body converted to UTF-8 and the name
// of its encoding.
func decodeCSS(contentType string, body []byte) ([]byte, string) {
	name := ""
	switch {
	case bytes.HasPrefix(body, []byte("\xef\xbb\xbf")):
		return body[3:], "utf-8"
	case bytes.HasPrefix(body, []byte("\xfe\xff")):
		name = "utf-16be"
	case bytes.HasPrefix(body, []byte("\xff\xfe")):
		name = "utf-16le"
	}
	if name == "" {
		if _, params, err := mime.ParseMediaType(contentType); err == nil {
			name = params["charset"]
		}
	}
	if name == "" {
		// @charset "NAME"; exactly so, at the start (CSS Syntax 3.2).
		const at = `@charset "`
		if bytes.HasPrefix(body, []byte(at)) {
			rest := body[len(at):min(len(body), len(at)+64)]
			if i := bytes.Index(rest, []byte(`";`)); i >= 0 {
				name = string(rest[:i])
			}
		}
	}
	enc, canonical := charset.Lookup(strings.TrimSpace(name))
	if enc == nil || canonical == "utf-8" {
		return body, "utf-8"
	}
	if canonical == "utf-16be" || canonical == "utf-16le" {
		// @charset naming UTF-16 is read as UTF-8 (the sheet would not be
		// ASCII-compatible otherwise); only a BOM makes UTF-16.
		if !bytes.HasPrefix(body, []byte("\xfe\xff")) && !bytes.HasPrefix(body, []byte("\xff\xfe")) {
			return body, "utf-8"
		}
	}
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		return body, "utf-8"
	}
	return out, canonical
}
