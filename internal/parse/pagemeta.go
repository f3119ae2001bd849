package parse

import (
	"math/bits"
	"unicode/utf8"
)

// MaxMetaElements bounds each list of a PageMeta (Metas, LinkTags,
// Scripts, Links); elements beyond it are counted in PageMeta.Dropped.
const MaxMetaElements = 5000

// MaxAnchorText is the longest anchor text kept for one link, in bytes.
const MaxAnchorText = 1024

// PageMeta is what a pass with Options.Meta collects for the metadata and
// text outputs of a page (WAT's HTML-Metadata, WET's text): the elements
// WAT lists, with their attribute values as written (URLs unresolved), and
// the page's visible text. The zero value is ready to use; HTML resets it.
type PageMeta struct {
	Base     string   // href of the first <base>
	Metas    []Fields // <meta>: name, property, http-equiv, charset, content (those present; none: left out)
	LinkTags []Fields // <link>: path "LINK@/href", url, rel, type
	Scripts  []Fields // <script src>: path "SCRIPT@/src", url, type
	// Links are the page's outlinks and embeds in document order: path
	// (as "A@/href", "IMG@/src", "FORM@/action"), url, then the element's
	// attributes WAT keeps (title, rel, target, alt) and, for A, its text.
	Links   []Fields
	Dropped int // elements beyond MaxMetaElements
	// Text is the visible text of the page: the text outside script,
	// style and the title, one line per block element (p, div, li, br,
	// headings, table rows...), white space collapsed within a line and
	// blank lines dropped. The title is Result.Title. It is nil when
	// NoText is set.
	Text []byte
	// NoText, set by the caller and kept by HTML, has the pass leave Text
	// nil: a caller that needs the visible text of some pages only gets
	// it from VisibleText.
	NoText bool

	anchor    int // index in Links of the open <a>, or -1
	anchorTxt []byte
	collapsed []byte      // scratch for the anchor's text collapsed
	vis       visibleText // Text as it is collected
	// The fields' values, which finish makes strings: their bytes one
	// after another in vals, and where each goes.
	vals  []byte
	spans []valueSpan
}

// valueSpan is where a field value held in PageMeta.vals goes: field
// field of element elem of the list l.
type valueSpan struct {
	l                 *[]Fields
	elem, field       int32
	valFrom, valUntil int32
}

// Fields is an element's attributes as name, value pairs: Fields[2i] is a
// name and Fields[2i+1] its value.
type Fields []string

// Get returns the value of the field named name, or "".
func (f Fields) Get(name string) string {
	for i := 0; i+1 < len(f); i += 2 {
		if f[i] == name {
			return f[i+1]
		}
	}
	return ""
}

// maxKeptVals is the largest buffer of field values reset keeps for the
// next page.
const maxKeptVals = 1 << 20

// reset empties m for a new page, keeping its buffers (those of the field
// values up to maxKeptVals bytes).
func (m *PageMeta) reset() {
	clear(m.spans) // their lists are the last page's
	*m = PageMeta{NoText: m.NoText, anchorTxt: m.anchorTxt[:0], collapsed: m.collapsed[:0], anchor: -1,
		vis: visibleText{b: m.vis.b[:0]}, vals: m.vals[:0], spans: m.spans[:0]}
	if cap(m.vals) > maxKeptVals {
		m.vals, m.spans = nil, nil
	}
}

// linkElement is how WAT lists an element among Links: its path, and
// the attributes it reads: the one holding its URL (keys[0]), then those
// kept beside it (at most MaxAttrKeys in all).
type linkElement struct {
	path string
	keys []string
}

var (
	linkA      = linkElement{"A@/href", []string{"href", "target", "alt", "title", "rel", "hreflang", "type"}}
	linkArea   = linkElement{"AREA@/href", []string{"href", "rel"}}
	linkImg    = linkElement{"IMG@/src", []string{"src", "alt", "title"}}
	linkForm   = linkElement{"FORM@/action", []string{"action", "target", "method"}}
	linkIframe = linkElement{"IFRAME@/src", []string{"src"}}
	linkFrame  = linkElement{"FRAME@/src", []string{"src"}}
	linkEmbed  = linkElement{"EMBED@/src", []string{"src"}}
	linkAudio  = linkElement{"AUDIO@/src", []string{"src"}}
	linkVideo  = linkElement{"VIDEO@/src", []string{"src"}}
	linkSource = linkElement{"SOURCE@/src", []string{"src"}}
	linkTrack  = linkElement{"TRACK@/src", []string{"src"}}
)

// The attributes WAT lists of <meta>, <link href> and <script src>: for
// the last two, the one holding the URL first.
var (
	metaKeys    = []string{"name", "property", "http-equiv", "charset", "content"}
	linkTagKeys = []string{"href", "rel", "type"}
	scriptKeys  = []string{"src", "type"}
)

// linkOf returns how WAT lists the element name among Links, or nil.
func linkOf(name []byte) *linkElement {
	switch string(name) {
	case "a":
		return &linkA
	case "area":
		return &linkArea
	case "img":
		return &linkImg
	case "form":
		return &linkForm
	case "iframe":
		return &linkIframe
	case "frame":
		return &linkFrame
	case "embed":
		return &linkEmbed
	case "audio":
		return &linkAudio
	case "video":
		return &linkVideo
	case "source":
		return &linkSource
	case "track":
		return &linkTrack
	}
	return nil
}

// isBlock reports whether the element name starts and ends a line of Text.
func isBlock(name []byte) bool {
	switch string(name) {
	case "p", "div", "br", "li", "ul", "ol", "dl", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "td", "th",
		"table", "section", "article", "header", "footer", "nav", "aside", "main", "pre", "blockquote", "hr",
		"form", "figure", "figcaption", "address", "title", "body", "option":
		return true
	}
	return false
}

// startTag records the element of the start tag name that s holds.
func (m *PageMeta) startTag(s *scanner, name []byte) {
	if isBlock(name) {
		m.lineBreak()
	}
	switch string(name) {
	case "base":
		if v, ok := s.attr("href"); ok && m.Base == "" {
			m.Base = string(v)
		}
		return
	case "meta":
		m.element(&m.Metas, s, "", metaKeys, 0)
		return
	case "link":
		m.element(&m.LinkTags, s, "LINK@/href", linkTagKeys, 0)
		return
	case "script":
		m.element(&m.Scripts, s, "SCRIPT@/src", scriptKeys, 0)
		return
	case "a":
		m.endAnchor()
	}
	la := linkOf(name)
	if la == nil {
		return
	}
	if string(name) == "a" {
		if m.element(&m.Links, s, la.path, la.keys, 2) { // room for its text
			m.anchor = len(m.Links) - 1
		}
		return
	}
	m.element(&m.Links, s, la.path, la.keys, 0)
}

// endTag ends the element name.
func (m *PageMeta) endTag(name []byte) {
	if string(name) == "a" {
		m.endAnchor()
	}
	if isBlock(name) {
		m.lineBreak()
	}
}

// element adds to the list *l the fields of s's start tag, from one walk
// of the tag, with room for spare more, and reports whether it did. With
// a path, the element is listed with its URL, the value of keys[0]: path,
// url, then the attributes of keys[1:] that are present (none without
// the URL). Without, the fields are the attributes of keys that are
// present (none: no element). An element beyond MaxMetaElements is
// counted in Dropped instead.
func (m *PageMeta) element(l *[]Fields, s *scanner, path string, keys []string, spare int) bool {
	a := s.lookupAttrs(keys)
	if _, ok := a.Get(0); a.has == 0 || path != "" && !ok {
		return false
	}
	if len(*l) >= MaxMetaElements {
		m.Dropped++
		return false
	}
	n := 2*bits.OnesCount8(a.has) + spare
	if path != "" {
		n += 2
	}
	f := make(Fields, 0, n)
	for i, k := range keys {
		v, ok := a.Get(i)
		switch {
		case !ok:
			continue
		case i == 0 && path != "":
			f = append(f, "path", path, "url", "")
		default:
			f = append(f, k, "")
		}
		m.value(l, len(*l), len(f)-1, v)
	}
	*l = append(*l, f)
	return true
}

// value keeps v as the value of field field of element elem of *l,
// which finish sets.
func (m *PageMeta) value(l *[]Fields, elem, field int, v []byte) {
	from := len(m.vals)
	m.vals = append(m.vals, v...)
	m.spans = append(m.spans, valueSpan{l: l, elem: int32(elem), field: int32(field), valFrom: int32(from), valUntil: int32(len(m.vals))})
}

// text adds a piece of visible text.
func (m *PageMeta) text(t []byte) {
	if m.anchor >= 0 && len(m.anchorTxt) < MaxAnchorText {
		m.anchorTxt = append(m.anchorTxt, t[:min(len(t), MaxAnchorText-len(m.anchorTxt))]...)
	}
	if !m.NoText {
		m.vis.add(t)
	}
}

// lineBreak ends the current line of Text, if it has any text.
func (m *PageMeta) lineBreak() {
	if !m.NoText {
		m.vis.lineBreak()
	}
}

// endAnchor gives the open <a> its text, white space collapsed.
func (m *PageMeta) endAnchor() {
	if m.anchor < 0 {
		return
	}
	m.collapsed = collapseSpace(m.collapsed, m.anchorTxt)
	if len(m.collapsed) > 0 {
		m.Links[m.anchor] = append(m.Links[m.anchor], "text", "")
		m.value(&m.Links, m.anchor, len(m.Links[m.anchor])-1, m.collapsed)
	}
	m.anchor, m.anchorTxt = -1, m.anchorTxt[:0]
}

// finish ends the pass: an <a> left open gets its text, and Text ends
// with a line break unless it is empty.
func (m *PageMeta) finish() {
	m.endAnchor()
	all := string(m.vals)
	for _, sp := range m.spans {
		(*sp.l)[sp.elem][sp.field] = all[sp.valFrom:sp.valUntil]
	}
	if !m.NoText {
		m.Text = m.vis.text()
	}
}

// collapseSpace returns b with runs of white space turned into one space,
// trimmed, cut to a character boundary, in buf's storage.
func collapseSpace(buf, b []byte) []byte {
	out := buf[:0]
	space := false
	for _, c := range b {
		if isSpace(c) {
			space = len(out) > 0
			continue
		}
		if space {
			out = append(out, ' ')
			space = false
		}
		out = append(out, c)
	}
	for len(out) > 0 && !utf8.Valid(out) {
		out = out[:len(out)-1]
	}
	return out
}
