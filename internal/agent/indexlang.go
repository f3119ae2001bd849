package agent

import (
	"github.com/petrel-crawler/petrel/internal/parse"
	"github.com/petrel-crawler/petrel/internal/store"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// PageLanguages finds a stored page's languages as the crawl finds them
// with --languages (readLanguages), for a CDXJ index made again from the
// WARC files (store.IndexOptions): those of a 2xx HTML page (its title
// and the start of its visible text) or text/plain one (the start of
// its body). The record does not say why the crawl fetched it: a
// robots.txt has none, but a sitemap, a style sheet or a script stored
// as HTML or text/plain gets the languages the crawl did not look for.
type PageLanguages struct{}

var _ store.Languages = PageLanguages{}

// PayloadLanguages implements store.Languages.
func (PageLanguages) PayloadLanguages(uri string, p *store.Payload) string {
	base, err := urlx.Parse(uri)
	if err != nil || p.Status < 200 || p.Status >= 300 || base.Path() == "/robots.txt" {
		return ""
	}
	var res *parse.Result
	if parse.IsHTML(p.Header, p.Body) {
		r := parse.HTML(base, p.Header, p.Body, parse.Options{MaxText: MaxLanguageText})
		res = &r
	}
	langs, _ := bodyLanguages(res, p.Header, p.Body)
	return langs
}

// indexOptions are the options of the CDXJ indexes the crawl makes from
// its WARC files (at the end of a run, after a crash's repair): with
// their languages when it detects them (--languages).
func (a *Agent) indexOptions() store.IndexOptions {
	if !a.cfg.Store.Languages {
		return store.IndexOptions{}
	}
	return store.IndexOptions{Languages: PageLanguages{}}
}
