package agent

import (
	"strings"
	"unicode/utf8"

	"github.com/petrel-crawler/petrel/internal/fetch"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/lang"
	"github.com/petrel-crawler/petrel/internal/parse"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// MaxLanguageText bounds the text a page's languages are detected on:
// the first MaxLanguageText bytes of its visible text
// (parse.Options.MaxText; its title goes before them), or of a
// text/plain body. BENCHMARKS.md has how it was chosen.
const MaxLanguageText = 4 << 10

// early is a page read before it is stored, because its languages are
// wanted there (the store filter, the CDXJ line, the crawl.log line): its
// decoded body and, for an HTML page, the result of its one parse, which
// parse (parsers.go) then uses instead of parsing the page again.
type early struct {
	body []byte
	err  error         // of decoding the body
	res  *parse.Result // the HTML parse, nil for a text/plain page
	// langs are the page's languages as the CDXJ field has them
	// (lang.Codes); "" when none was identified.
	langs string
}

// languages returns the languages of e's page; "" for a nil e.
func (e *early) languages() string {
	if e == nil {
		return ""
	}
	return e.langs
}

// wantLanguages reports whether the languages of pages are detected:
// --languages, or a filter in force reads them.
func (a *Agent) wantLanguages() bool {
	return a.cfg.Store.Languages || a.live.Load().filters.NeedsLanguage()
}

// readEarly reads the response to t before it is stored when languages
// are wanted and it is a page parse would read: a 2xx HTML page (parsed
// once, with its visible text kept) or a 2xx text/plain one. It returns
// nil for any other response (robots.txt, sitemaps, redirects, style
// sheets and scripts taken as requisites, images).
func (a *Agent) readEarly(t *frontier.Task, resp *fetch.Response) *early {
	if t.Robots || resp.Status < 200 || resp.Status >= 300 || !a.wantLanguages() {
		return nil
	}
	if _, ok := sitemapLevel(t.Meta); ok && a.cfg.Sitemaps {
		return nil
	}
	requisites := a.cfg.MaxEmbedHops > 0
	if t.Meta.Embeds > 0 && !requisites {
		return nil
	}
	base, err := urlx.Parse(resp.URL)
	if err != nil {
		return nil
	}
	if path := base.Path(); requisites && (parse.IsCSS(resp.Header, path) || a.cfg.JSLiterals && parse.IsJS(resp.Header, path)) {
		return nil
	}
	l := a.live.Load()
	body, err := fetch.DecodeBody(resp, l.maxBody)
	e := &early{body: body, err: err}
	switch {
	case parse.IsHTML(resp.Header, body):
		res := parse.HTML(base, resp.Header, body, parse.Options{MaxLinks: l.maxLinks, Embeds: requisites,
			JSLiterals: a.cfg.JSLiterals, MaxText: MaxLanguageText})
		e.res = &res
		e.langs = lang.Codes(lang.Detect(pageText(res.Title, res.Text)))
	case isPlainText(resp.Header.Get("Content-Type")):
		e.langs = lang.Codes(lang.Detect(string(textHead(body, MaxLanguageText))))
	default:
		return nil
	}
	return e
}

// pageText is the text a page's languages are detected on, from its
// parse with parse.Options.MaxText: its title on the first line, then its
// visible text (no title line when it has none).
func pageText(title string, text []byte) string {
	if title == "" {
		return string(text)
	}
	return title + "\n" + string(text)
}

// isPlainText reports whether a Content-Type is text/plain.
func isPlainText(ct string) bool {
	mime, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mime), "text/plain")
}

// textHead returns the first n bytes of b or fewer, cut at a character
// boundary.
func textHead(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return b[:n]
}
