package parse

import (
	"unicode/utf8"

	"github.com/petrel-crawler/petrel/internal/ascii"
)

// Page requisites: the URLs a browser fetches to render a page (Heritrix's
// embeds, E hops), taken from the attributes of the start tags the scanner
// (or the reference walk) gives, from style attributes and <style> blocks.
//
// The extractor asks the attributes it needs of a tag once (embedAttrs,
// filled by the scanner in one walk of the tag, or by the reference walk
// from the Tokenizer), then requisites decides what they mean: both walks
// share that decision, so the differential tests compare the scanners.

// Which of a token's text follows which start tag (the extractor's run
// loop): the text of a <style> is a style sheet, that of the first <title>
// the page's title, that of a <script> a script.
const (
	afterOther = iota
	afterStyle
	afterTitle
	afterScript
)

// afterTag says what the text after a start tag named name is.
func afterTag(name []byte) int {
	switch string(name) {
	case "style":
		return afterStyle
	case "title":
		return afterTitle
	case "script":
		return afterScript
	}
	return afterOther
}

// The attributes requisites reads, as indexes into embedAttrs.v.
const (
	attrSrc = iota
	attrSrcset
	attrPoster
	attrHref
	attrRel
	attrRev
	attrData
	attrType
	attrBackground
	attrStyle
	attrDataSrc
	attrDataSrcset
	numEmbedAttrs
)

// embedAttrs holds the first value of each attribute requisites reads
// (decoded as TagAttr gives it) and which of them the tag has.
type embedAttrs struct {
	v   [numEmbedAttrs][]byte
	has uint16
}

// set records value v of attribute k unless the tag had one before (the
// Tokenizer keeps the first of duplicates).
func (e *embedAttrs) set(k int, v []byte) {
	if e.has&(1<<k) == 0 {
		e.has |= 1 << k
		e.v[k] = v
	}
}

// get returns attribute k's value and whether the tag has it.
func (e *embedAttrs) get(k int) ([]byte, bool) {
	return e.v[k], e.has&(1<<k) != 0
}

// embedAttrKey returns the index of the attribute named key (in any ASCII
// case) among those requisites reads, or -1.
func embedAttrKey(key []byte) int {
	var buf [len("data-srcset")]byte
	if len(key) > len(buf) || len(key) < 3 {
		return -1
	}
	for i, c := range key {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	switch string(buf[:len(key)]) {
	case "src":
		return attrSrc
	case "srcset":
		return attrSrcset
	case "poster":
		return attrPoster
	case "href":
		return attrHref
	case "rel":
		return attrRel
	case "rev":
		return attrRev
	case "data":
		return attrData
	case "type":
		return attrType
	case "background":
		return attrBackground
	case "style":
		return attrStyle
	case "data-src":
		return attrDataSrc
	case "data-srcset":
		return attrDataSrcset
	}
	return -1
}

// mayBeEmbedAttr reports whether an attribute key of n bytes starting with
// c may be one that requisites reads on any element: style, data-src or
// data-srcset. The scanner asks it of every key, so it is cheap and may
// say yes too often.
func mayBeEmbedAttr(n int, c byte) bool {
	return (n == 5 || n == 8 || n == 11) && (c|0x20 == 's' || c|0x20 == 'd')
}

// isEmbedTag reports whether requisites reads attributes of elements
// named name other than style, data-src and data-srcset.
func isEmbedTag(name []byte) bool {
	switch string(name) {
	case "img", "source", "video", "audio", "track", "script", "embed", "object", "input", "body":
		return true
	}
	return false
}

// isLinkTag reports whether name is "link", whose navigation rels are
// links even when requisites are not asked for.
func isLinkTag(name []byte) bool { return string(name) == "link" }

// requisites records the requisites (and the links of a <link>) that the
// start tag name with the attributes e holds.
func (x *extractor) requisites(name []byte, e *embedAttrs) {
	if string(name) == "link" {
		x.linkTag(e)
	}
	if !x.embeds {
		return
	}
	switch string(name) {
	case "img", "source":
		x.embedAttr(e, attrSrc)
		x.srcset(e, attrSrcset)
	case "video":
		x.embedAttr(e, attrSrc)
		x.embedAttr(e, attrPoster)
	case "script":
		x.embedAttr(e, attrSrc)
		_, src := e.get(attrSrc)
		t, _ := e.get(attrType)
		x.inScript = x.jsLits && !src && isScriptType(t)
	case "audio", "track", "embed":
		x.embedAttr(e, attrSrc)
	case "object":
		x.embedAttr(e, attrData)
	case "input":
		if t, _ := e.get(attrType); ascii.EqualFold(t, "image") {
			x.embedAttr(e, attrSrc)
		}
	case "body":
		x.embedAttr(e, attrBackground)
	}
	if v, ok := e.get(attrStyle); ok {
		x.styleSheet(v)
	}
	x.embedAttr(e, attrDataSrc)
	x.srcset(e, attrDataSrcset)
}

// linkTag handles a <link href> by its relations (see linkRel): a
// requisite when a rel token names one, else a link when a rel token names
// a page or rev is "made" (the author's page, as wget follows it), else
// nothing.
func (x *extractor) linkTag(e *embedAttrs) {
	href, ok := e.get(attrHref)
	if !ok {
		return
	}
	rel, _ := e.get(attrRel)
	isLink := false
	for f, rest := nextField(rel); f != nil; f, rest = nextField(rest) {
		switch linkRel(f) {
		case relRequisite:
			if x.embeds {
				x.embed(href)
			}
			return
		case relPage:
			isLink = true
		}
	}
	rev, _ := e.get(attrRev)
	for f, rest := nextField(rev); f != nil && !isLink; f, rest = nextField(rest) {
		isLink = ascii.EqualFold(f, "made")
	}
	if isLink {
		x.link(href)
	}
}

// What a <link> relation makes of its href.
const (
	relOther     = iota // nothing to fetch: an origin (dns-prefetch, preconnect) or an endpoint (pingback, webmention, EditURI)
	relPage             // a link (L hop)
	relRequisite        // a page requisite (E hop)
)

// linkRel classifies one rel token (in any ASCII case). Requisites are
// what a browser or a replay fetches with the page: style sheets (an
// "alternate stylesheet" too), icons, preloads, the web app manifest.
// Pages are what a reader follows from it: the HTML 4 and HTML link types
// that name a document (canonical, alternate, next, prev, search — an
// OpenSearch description or a search page —, author, help, license,
// the navigation of a book: start, contents, index, up, first, last...),
// and prefetch and prerender, which name a page the author expects to be
// visited next.
func linkRel(tok []byte) int {
	var buf [len("apple-touch-icon-precomposed")]byte
	if len(tok) > len(buf) {
		return relOther
	}
	for i, c := range tok {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	switch string(buf[:len(tok)]) {
	case "stylesheet", "icon", "apple-touch-icon", "apple-touch-icon-precomposed", "apple-touch-startup-image",
		"mask-icon", "preload", "modulepreload", "manifest":
		return relRequisite
	case "canonical", "alternate", "next", "prev", "previous", "prefetch", "prerender", "search",
		"author", "help", "license", "copyright", "start", "home", "first", "last", "up", "contents", "toc",
		"index", "glossary", "appendix", "chapter", "section", "subsection", "bookmark":
		return relPage
	}
	return relOther
}

// embedAttr records attribute k's URL, if the tag has one that is not
// empty, as a requisite.
func (x *extractor) embedAttr(e *embedAttrs, k int) {
	if v, ok := e.get(k); ok && len(trimSpace(v)) > 0 {
		x.embed(v)
	}
}

// srcset records the URLs of the image candidates of attribute k.
func (x *extractor) srcset(e *embedAttrs, k int) {
	v, _ := e.get(k)
	for u, rest, ok := nextSrcset(v); ok; u, rest, ok = nextSrcset(rest) {
		x.embed(u)
	}
}

// styleSheet records the URLs of the style sheet (or declarations) css,
// resolved against the page's base, their queries in UTF-8 (CSS's rule).
func (x *extractor) styleSheet(css []byte) {
	// CSS URLs are UTF-8 whatever the document's encoding.
	qenc := x.qenc
	x.qenc = nil
	defer func() { x.qenc = qenc }()
	// On the stack, and made as a value (a store through a pointer would
	// move css, which may be in the HTML scanner's buffer, to the heap).
	c := cssScanner{b: css}
	for u, ok := c.next(); ok; u, ok = c.next() {
		if len(trimSpace(u)) > 0 {
			x.embed(u)
		}
	}
}

// titleText appends a piece of the title's text to the title, turning runs
// of HTML white space into one space and dropping the leading one, up to
// MaxTitle bytes.
func (x *extractor) titleText(t []byte) {
	n := x.titleN
	for _, c := range t {
		if n == len(x.titleArr) {
			break
		}
		if isSpace(c) {
			if n == 0 || x.titleArr[n-1] == ' ' {
				continue
			}
			c = ' '
		}
		x.titleArr[n] = c
		n++
	}
	x.titleN = n
}

// titleString returns the collected title without its trailing space and
// without a character the cap cut in two.
func titleString(t []byte) string {
	for len(t) > 0 && t[len(t)-1] == ' ' {
		t = t[:len(t)-1]
	}
	if len(t) == MaxTitle {
		for i := len(t) - 1; i >= 0 && i >= len(t)-utf8.UTFMax; i-- {
			if utf8.RuneStart(t[i]) {
				if !utf8.FullRune(t[i:]) {
					t = t[:i]
				}
				break
			}
		}
	}
	return string(t)
}

// trimSpace returns v without leading and trailing HTML white space.
func trimSpace(v []byte) []byte {
	for len(v) > 0 && isSpace(v[0]) {
		v = v[1:]
	}
	for len(v) > 0 && isSpace(v[len(v)-1]) {
		v = v[:len(v)-1]
	}
	return v
}
