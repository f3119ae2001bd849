package dataset

import (
	"github.com/petrel-crawler/petrel/internal/extract"
	"github.com/petrel-crawler/petrel/internal/lang"
	"github.com/petrel-crawler/petrel/internal/parse"
	"github.com/petrel-crawler/petrel/internal/store"
)

// Text says what the WET record of a page holds. The zero value is
// TextMain.
type Text string

// The forms of a page's text.
const (
	// TextMain is the page's main text (package extract): the page's
	// title on the first line, then the main text's headline (its first
	// h1, when not the title) and blocks, separated by blank lines; a page
	// in which no main text is found has its visible text instead.
	TextMain Text = "main"
	// TextAll is the visible text of the whole page, menus and footers
	// included, as Common Crawl's WET has it: the title on the first line,
	// then one line per block element.
	TextAll Text = "all"
)

// pageText returns the text of the HTML page p (titled title, its
// visible text in meta unless meta.NoText, its main text found by ext)
// in form t, and the languages identified in it as Common Crawl writes
// them (ISO 639-3 codes, comma-separated, largest share first; "" when
// none).
func pageText(p *store.Payload, title string, meta *parse.PageMeta, ext *extract.Extractor, t Text) (text []byte, langs string) {
	text = mainText(p, title, ext, t)
	if text == nil {
		text = visibleText(title, pageVisibleText(p, meta))
	}
	return text, lang.Codes(lang.Detect(string(text)))
}

// pageVisibleText returns the visible text of the page p: meta's, or
// collected from p when meta.NoText left it out.
func pageVisibleText(p *store.Payload, meta *parse.PageMeta) []byte {
	if meta.NoText {
		return parse.VisibleText(p.Header.Get("Content-Type"), p.Body)
	}
	return meta.Text
}

// mainText is the main text of p: the page's title on the first line
// (as in Common Crawl's WET), then a blank line and the main text's
// blocks, led by its headline when that is not the title; nil when t is
// TextAll or no main text is found.
func mainText(p *store.Payload, title string, ext *extract.Extractor, t Text) []byte {
	if t == TextAll {
		return nil
	}
	d, err := ext.MainText(p.Body, p.Header.Get("Content-Type"))
	if err != nil { // extract.ErrNoMainText: only boilerplate, or no text
		return nil
	}
	b := make([]byte, 0, len(title)+len(d.Title)+d.TextLen()+5)
	if title != "" {
		b = append(append(b, title...), "\n\n"...)
	}
	if d.Title != "" && d.Title != title {
		b = append(append(b, d.Title...), "\n\n"...)
	}
	b = d.AppendText(b)
	return append(b, '\n')
}

// visibleText is the visible text of a page (vis, as
// parse.PageMeta.Text holds it) with its title on the first line.
func visibleText(title string, vis []byte) []byte {
	var b []byte
	if title != "" {
		b = append(b, title...)
		b = append(b, '\n')
	}
	return append(b, vis...)
}
