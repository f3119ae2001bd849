package dataset

import (
	"github.com/petrel-crawler/petrel/internal/extract"
	"github.com/petrel-crawler/petrel/internal/lang"
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

// pageText returns the text of an HTML page rec in form t, and the
// languages identified in it as Common Crawl writes them (ISO 639-3
// codes, comma-separated, largest share first; "" when none).
func pageText(rec *record, t Text) (text []byte, langs string) {
	text = mainText(rec, t)
	if text == nil {
		text = visibleText(rec)
	}
	return text, lang.Codes(lang.Detect(string(text)))
}

// mainText is the main text of rec: the page's title on the first line
// (as in Common Crawl's WET), then a blank line and the main text's
// blocks, led by its headline when that is not the title; nil when t is
// TextAll or no main text is found.
func mainText(rec *record, t Text) []byte {
	if t == TextAll {
		return nil
	}
	d, err := extract.MainText(rec.payload.Body, rec.contentType())
	if err != nil { // extract.ErrNoMainText: only boilerplate, or no text
		return nil
	}
	var b []byte
	if rec.page.Title != "" {
		b = append(append(b, rec.page.Title...), "\n\n"...)
	}
	if d.Title != "" && d.Title != rec.page.Title {
		b = append(append(b, d.Title...), "\n\n"...)
	}
	b = append(b, d.Text()...)
	return append(b, '\n')
}

// visibleText is the visible text of rec: its title on the first line,
// then one line per block element.
func visibleText(rec *record) []byte {
	var b []byte
	if t := rec.page.Title; t != "" {
		b = append(b, t...)
		b = append(b, '\n')
	}
	return append(b, rec.meta.Text...)
}
