package agent

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/petrel-crawler/petrel/internal/dataset"
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

// early is a response read before it is stored, because its languages
// are wanted there (the store filter, the CDXJ line, the crawl.log line)
// or because the dataset outputs are written (datasetread.go): its
// decoded body and, for an HTML page, the result of its one parse, which
// parse (parsers.go) then uses instead of parsing the page again.
type early struct {
	body []byte
	err  error         // of decoding the body
	res  *parse.Result // the HTML parse, nil for a text/plain page
	// langs are the page's languages as the CDXJ field has them
	// (lang.Codes); "" when none was identified.
	langs string
	// capture is what the dataset outputs take of the response (nil
	// unless they are written).
	capture *dataset.Capture
}

// languages returns the languages of e's page; "" for a nil e.
func (e *early) languages() string {
	if e == nil {
		return ""
	}
	return e.langs
}

// note returns what goes with the response to the store for the dataset
// outputs (store.Exchange.Note): its Capture, or nil.
func (e *early) note() any {
	if e == nil || e.capture == nil {
		return nil
	}
	return e.capture
}

// wantLanguages reports whether the languages of pages are detected:
// --languages, or a filter in force reads them.
func (a *Agent) wantLanguages() bool {
	return a.cfg.Store.Languages || a.live.Load().filters.NeedsLanguage()
}

// languagePage reports whether the languages of the response to t are
// detected: they are wanted and it is a page parse would read, a 2xx
// response that is not a robots.txt, a sitemap, nor a style sheet or a
// script taken as a requisite (an HTML or text/plain body, to be seen).
func (a *Agent) languagePage(t *frontier.Task, resp *fetch.Response, base urlx.URL) bool {
	if t.Robots || resp.Status < 200 || resp.Status >= 300 || !a.wantLanguages() {
		return false
	}
	if _, ok := sitemapLevel(t.Meta); ok && a.cfg.Sitemaps {
		return false
	}
	requisites := a.cfg.MaxEmbedHops > 0
	if t.Meta.Embeds > 0 && !requisites {
		return false
	}
	path := base.Path()
	return !requisites || !parse.IsCSS(resp.Header, path) && !(a.cfg.JSLiterals && parse.IsJS(resp.Header, path))
}

// readEarly reads the response to t before it is stored when the dataset
// outputs are written (readForDatasets), or when languages are wanted and
// it is a page parse would read (languagePage): a 2xx HTML page (parsed
// once, with its visible text kept) or a 2xx text/plain one. Else it
// returns nil.
func (a *Agent) readEarly(t *frontier.Task, resp *fetch.Response) *early {
	base, err := urlx.Parse(resp.URL)
	if a.datasets != nil {
		return a.readForDatasets(resp, base, err == nil, err == nil && a.languagePage(t, resp, base))
	}
	if err != nil || !a.languagePage(t, resp, base) {
		return nil
	}
	return a.readLanguages(resp, base)
}

// readLanguages decodes the body of a response whose languages are
// wanted and detects them (bodyLanguages): from the one parse of an HTML
// page (its visible text kept), or from the start of a text/plain body;
// nil for any other response.
func (a *Agent) readLanguages(resp *fetch.Response, base urlx.URL) *early {
	body, err := fetch.DecodeBody(resp, a.live.Load().maxBody)
	e := &early{body: body, err: err}
	if parse.IsHTML(resp.Header, body) {
		res := parse.HTML(base, resp.Header, body, a.pageOptions(nil, true))
		e.res = &res
	}
	var ok bool
	if e.langs, ok = bodyLanguages(e.res, resp.Header, body); !ok {
		return nil
	}
	return e
}

// pageOptions are the options of the crawl's parse of an HTML page, with
// meta filled in the same pass (when not nil) and the start of its
// visible text kept when text is set (for its languages).
func (a *Agent) pageOptions(meta *parse.PageMeta, text bool) parse.Options {
	o := parse.Options{MaxLinks: a.live.Load().maxLinks, Embeds: a.cfg.MaxEmbedHops > 0, JSLiterals: a.cfg.JSLiterals, Meta: meta}
	if text {
		o.MaxText = MaxLanguageText
	}
	return o
}

// bodyLanguages returns the languages of a decoded body as the CDXJ
// field has them: those of its page res (parsed with MaxLanguageText as
// parse.Options.MaxText) when it is one, else those of the start of a
// text/plain body. ok is false for any other body, whose languages are
// not detected.
func bodyLanguages(res *parse.Result, h http.Header, body []byte) (langs string, ok bool) {
	switch {
	case res != nil:
		return lang.Codes(lang.Detect(pageText(res.Title, res.Text))), true
	case isPlainText(h.Get("Content-Type")):
		return lang.Codes(lang.Detect(string(textHead(body, MaxLanguageText)))), true
	}
	return "", false
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
