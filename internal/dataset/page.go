package dataset

import (
	"github.com/petrel-crawler/petrel/internal/extract"
	"github.com/petrel-crawler/petrel/internal/parse"
	"github.com/petrel-crawler/petrel/internal/store"
)

// Page is what the outputs hold of an HTML page, made from its one parse
// (parse.HTML with parse.Options.Meta): the parse's figures, the WAT's
// HTML-Metadata, the WET text and its languages.
type Page struct {
	title    string
	charset  string
	simHash  uint64
	shingles int
	html     rawJSON // WAT's HTML-Metadata; nil unless the WAT is written
	// text is the WET text (pageText) and langs its languages, as the WET
	// record and the index row have them; set when either is written.
	text  []byte
	langs string
}

// IsPage reports whether the outputs take the response payload p for an
// HTML page, to be parsed: a 2xx response whose payload is HTML by its
// Content-Type or by sniffing.
func IsPage(p *store.Payload) bool {
	return p.Status >= 200 && p.Status < 300 && parse.IsHTML(p.Header, p.Body)
}

// newPage returns the Page of the payload p, parsed as res with meta
// filled in the same pass, with what o asks for, its main text found by
// ext. meta may be reused once it returns.
func newPage(p *store.Payload, res *parse.Result, meta *parse.PageMeta, ext *extract.Extractor, o Options) *Page {
	pg := &Page{title: res.Title, charset: res.Charset, simHash: res.SimHash, shingles: res.Shingles}
	if o.WAT {
		pg.html = htmlMetadata(pg, meta).appendJSON(nil)
	}
	if o.WET || o.Rows {
		pg.text, pg.langs = pageText(p, pg.title, meta, ext, o.Text)
	}
	return pg
}
