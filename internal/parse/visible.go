package parse

import (
	"net/http"
	"unicode/utf8"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

// visibleText collects a page's visible text as PageMeta.Text and
// Result.Text hold it: one line per block element, white space collapsed
// within a line, blank lines dropped. The zero value collects without
// bound.
type visibleText struct {
	b     []byte
	space bool // white space is pending
	max   int  // bytes kept at most; 0: no bound
}

// full reports whether the bound is reached: nothing more is kept.
func (v *visibleText) full() bool { return v.max > 0 && len(v.b) >= v.max }

// add adds a piece of text.
func (v *visibleText) add(t []byte) {
	for len(t) > 0 && !v.full() {
		if isSpace(t[0]) {
			v.space = true
			t = t[1:]
			continue
		}
		n := 1 // a run of bytes other than white space
		for n < len(t) && !isSpace(t[n]) {
			n++
		}
		if v.space && len(v.b) > 0 && v.b[len(v.b)-1] != '\n' {
			v.b = append(v.b, ' ')
		}
		v.space = false
		if v.max > 0 {
			n = max(0, min(n, v.max-len(v.b)))
		}
		v.b = append(v.b, t[:n]...)
		t = t[n:]
	}
}

// lineBreak ends the current line, if it has any text.
func (v *visibleText) lineBreak() {
	if len(v.b) > 0 && v.b[len(v.b)-1] != '\n' && !v.full() {
		v.b = append(v.b, '\n')
	}
	v.space = false
}

// text returns the text collected, ended by a line break unless empty; a
// bounded text is cut at a character boundary at most max bytes in.
func (v *visibleText) text() []byte {
	if v.full() {
		i := len(v.b) - 1
		for i > 0 && !utf8.RuneStart(v.b[i]) {
			i--
		}
		if !utf8.FullRune(v.b[i:]) {
			v.b = v.b[:i]
		}
		v.max = 0 // the line break goes in past the bound
	}
	v.lineBreak()
	return v.b
}

// VisibleText returns the visible text of the HTML page body, whose
// response has the Content-Type contentType ("" if none): the
// PageMeta.Text of a pass of HTML with Options.Meta, made for it. It is
// for the page whose pass left the text out (PageMeta.NoText) and turns
// out to need it.
func VisibleText(contentType string, body []byte) []byte {
	var m PageMeta
	HTML(urlx.URL{}, contentTypeHeader(contentType), body, Options{Meta: &m})
	return m.Text
}

// contentTypeHeader is a response header holding the Content-Type
// contentType, or none when it is "".
func contentTypeHeader(contentType string) http.Header {
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	return h
}
