package extract

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/petrel-crawler/petrel/internal/ascii"
	"github.com/petrel-crawler/petrel/internal/parse"
)

// tag is what the pass knows of an element. The zero value is an inline
// element that it does not know.
type tag struct {
	flags   uint16
	heading int8 // 1–6 for h1–h6
}

// The flags of a tag.
const (
	fBlock  uint16 = 1 << iota // ends the block of text before and after it
	fNode                      // a container: the blocks it holds are scored together
	fSkip                      // its text is never seen
	fBoiler                    // boilerplate by name
	fVoid                      // never has content
	fP                         // p: closed by the start of any block
	fItem                      // li, dt, dd
	fList                      // ul, ol, dl
	fCell                      // td, th
	fRow                       // tr
	fTable                     // table
	fPre                       // pre
	fQuote                     // blockquote
	fA                         // a: its text is link text
	fBr                        // br
)

// lookup returns what the pass knows of the element name (lower case).
func lookup(name []byte) tag {
	switch string(name) {
	case "a":
		return tag{flags: fA}
	case "p":
		return tag{flags: fBlock | fP}
	case "div", "section", "article", "main", "body", "form", "figure", "center", "details", "fieldset":
		return tag{flags: fBlock | fNode}
	case "h1", "h2", "h3", "h4", "h5", "h6":
		return tag{flags: fBlock, heading: int8(name[1] - '0')}
	case "ul", "ol", "dl":
		return tag{flags: fBlock | fNode | fList}
	case "li", "dt", "dd":
		return tag{flags: fBlock | fItem}
	case "td", "th":
		return tag{flags: fBlock | fNode | fCell}
	case "tr":
		return tag{flags: fBlock | fRow}
	case "table":
		return tag{flags: fBlock | fNode | fTable}
	case "thead", "tbody", "tfoot", "caption", "figcaption", "summary", "address", "hgroup", "legend":
		return tag{flags: fBlock}
	case "pre":
		return tag{flags: fBlock | fPre}
	case "blockquote":
		return tag{flags: fBlock | fNode | fQuote}
	case "nav", "aside", "footer", "header", "menu", "dialog":
		return tag{flags: fBlock | fNode | fBoiler}
	case "script", "style", "noscript", "template", "svg", "math", "iframe", "select",
		"button", "textarea", "head", "object", "canvas", "audio", "video", "map", "datalist":
		return tag{flags: fBlock | fSkip}
	case "title":
		return tag{flags: fSkip}
	case "br":
		return tag{flags: fVoid | fBr}
	case "hr":
		return tag{flags: fVoid | fBlock}
	case "img", "input", "meta", "link", "wbr", "area", "base", "col", "embed", "param", "source", "track", "keygen":
		return tag{flags: fVoid}
	}
	return tag{}
}

// elem is an open element.
type elem struct {
	tag
	name   elemName // for end-tag matching
	node   int32    // the container it opened, or -1
	skip   bool     // hidden: its text is dropped
	boiler uint8    // boilerplate (byTag, byClass): its blocks are marked
}

// node is a container: an element whose blocks are scored together. Its
// blocks are blocks[first:end].
type node struct {
	parent     int32 // -1 for none
	first, end int32
	weight     int16 // from its tag, class and id
	list       bool  // ul, ol or dl
}

// rawBlock is a block as the pass finds it. Its Text is set when run
// ends; until then the text is pass.texts[from:to].
type rawBlock struct {
	Block
	from, to int32
	node     int32 // innermost container, or -1
	chars    int32 // characters of text
	links    int32 // characters of it inside links
	commas   int32 // commas of it (Latin and CJK)
	boiler   uint8 // byTag, byClass: under boilerplate
}

// The reasons a block is boilerplate.
const (
	byTag   uint8 = 1 << iota // under nav, aside, footer, header, menu or a boilerplate role
	byClass                   // under a class or id that names boilerplate
)

// pass is the state of the walk over one page.
type pass struct {
	toks   parse.Tokens
	stack  []elem
	nodes  []node
	blocks []rawBlock
	title  string

	tmp       []byte  // scratch for a text token
	lower     []byte  // scratch for a value lower-cased
	buf       []byte  // text of the block under way
	texts     []byte  // the blocks' texts, one after another
	kept      []Block // scratch for keep
	links     int     // bytes of buf inside links
	skip      int     // open elements whose text is dropped
	boiler    [2]int  // open boilerplate elements, byTag and byClass
	inA       int     // open a elements
	pre       int     // open pre elements
	row       int     // number of the current table row
	gotTitle  bool
	wantTitle bool // the token after <title>: its text, if it is one
}

// maxDepth bounds the stack: deeper elements are treated as inline.
const maxDepth = 512

// maxKeptText is the largest buffer of text reset keeps for the next
// page; maxKeptBlocks the most blocks.
const (
	maxKeptText   = 1 << 20
	maxKeptBlocks = 1 << 12
)

// reset readies p for a page of n bytes, keeping its buffers but those
// that grew past maxKeptText or maxKeptBlocks.
func (p *pass) reset(n int) {
	clear(p.blocks) // their texts are the last page's
	*p = pass{
		toks: p.toks, stack: p.stack[:0], nodes: p.nodes[:0], blocks: p.blocks[:0],
		tmp: p.tmp[:0], lower: p.lower[:0], buf: p.buf[:0], texts: p.texts[:0], kept: p.kept[:0],
	}
	clear(p.kept[:cap(p.kept)])
	if cap(p.blocks) > maxKeptBlocks || cap(p.kept) > maxKeptBlocks {
		p.blocks, p.kept = nil, nil
	}
	if cap(p.texts) > maxKeptText || cap(p.buf) > maxKeptText || cap(p.tmp) > maxKeptText || cap(p.lower) > maxKeptText {
		p.texts, p.buf, p.tmp, p.lower = nil, nil, nil, nil
	}
	if want := min(n, maxKeptText); cap(p.texts) < want {
		p.texts = make([]byte, 0, want)
	}
}

// run walks page (UTF-8) once, filling p.blocks, p.nodes and p.title.
func (p *pass) run(page []byte) {
	p.toks.Reset(page)
	p.stack = p.stack[:0]
	for {
		switch p.toks.Next() {
		case parse.EOF:
			p.closeTo(0)
			p.setTexts()
			return
		case parse.Text:
			p.text()
		case parse.StartTag:
			p.wantTitle = false
			p.start()
		case parse.EndTag:
			p.wantTitle = false
			p.end()
		}
	}
}

// text adds the current text token to the block under way.
func (p *pass) text() {
	if p.wantTitle {
		p.wantTitle = false
		p.title = collapse(string(p.toks.AppendText(nil)))
		return
	}
	if p.skip > 0 {
		return
	}
	n := len(p.buf)
	if p.pre > 0 {
		p.buf = p.toks.AppendText(p.buf)
	} else {
		p.tmp = p.toks.AppendText(p.tmp[:0])
		p.buf = appendCollapsed(p.buf, p.tmp)
	}
	if p.inA > 0 {
		p.links += len(p.buf) - n
	}
}

// appendCollapsed appends t to buf with runs of white space as one space,
// none at the start of buf or after a line break.
func appendCollapsed(buf, t []byte) []byte {
	space := len(buf) == 0 || buf[len(buf)-1] == ' ' || buf[len(buf)-1] == '\n'
	kept := 0 // t[kept:i] goes into buf as it is
	for i, c := range t {
		switch {
		case c > ' ' || !isSpace(c):
			space = false
		case c == ' ' && !space: // a single space stays
			space = true
		default: // dropped, or replaced by a space
			buf = append(buf, t[kept:i]...)
			if !space {
				buf = append(buf, ' ')
				space = true
			}
			kept = i + 1
		}
	}
	return append(buf, t[kept:]...)
}

// isSpace reports whether c is white space that appendCollapsed
// collapses.
func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f'
}

// collapse returns s with runs of white space as one space, trimmed.
func collapse(s string) string {
	return strings.TrimSpace(string(appendCollapsed(nil, []byte(s))))
}

// start acts on a start tag.
func (p *pass) start() {
	name := p.toks.TagName()
	t := lookup(name)
	if t.flags&fBr != 0 {
		if n := len(p.buf); n > 0 && p.buf[n-1] != '\n' {
			p.buf = append(bytes.TrimRight(p.buf, " "), '\n')
		}
		return
	}
	if t.flags&fBlock != 0 {
		p.implyEnd(t)
		p.flush()
	}
	if t.flags&fVoid != 0 || len(p.stack) >= maxDepth {
		return
	}
	e := elem{tag: t, name: nameOf(name), node: -1}
	if string(name) == "title" && !p.gotTitle {
		p.gotTitle, p.wantTitle = true, true
	}
	a := p.toks.Attrs(elementAttrs[:])
	e.skip = t.flags&fSkip != 0 || p.hidden(&a)
	if t.flags&fBoiler != 0 {
		e.boiler = byTag
	}
	if t.flags&fNode != 0 {
		w, role, unlikely := p.classWeight(&a)
		if role {
			e.boiler |= byTag
		}
		if unlikely {
			e.boiler |= byClass
		}
		e.node = int32(len(p.nodes))
		p.nodes = append(p.nodes, node{
			parent: p.innerNode(), first: int32(len(p.blocks)),
			weight: tagWeight(t) + w, list: t.flags&fList != 0,
		})
	}
	p.push(e)
}

// push opens e.
func (p *pass) push(e elem) {
	p.stack = append(p.stack, e)
	if e.skip {
		p.skip++
	}
	for i := range p.boiler {
		p.boiler[i] += int(e.boiler >> i & 1)
	}
	switch {
	case e.flags&fA != 0:
		p.inA++
	case e.flags&fPre != 0:
		p.pre++
	case e.flags&fRow != 0:
		p.row++
	}
}

// pop closes the innermost open element.
func (p *pass) pop() {
	e := p.stack[len(p.stack)-1]
	if e.flags&fBlock != 0 {
		p.flush()
	}
	p.stack = p.stack[:len(p.stack)-1]
	if e.skip {
		p.skip--
	}
	for i := range p.boiler {
		p.boiler[i] -= int(e.boiler >> i & 1)
	}
	switch {
	case e.flags&fA != 0:
		p.inA--
	case e.flags&fPre != 0:
		p.pre--
	case e.flags&fTable != 0:
		p.row++ // the next table's rows do not follow this one's
	}
	if e.node >= 0 {
		p.nodes[e.node].end = int32(len(p.blocks))
	}
}

// closeTo pops the open elements down to depth n.
func (p *pass) closeTo(n int) {
	for len(p.stack) > n {
		p.pop()
	}
	if n == 0 {
		p.flush()
	}
}

// end acts on an end tag: it closes the innermost open element of that
// name and those inside it, and is ignored when none is open.
func (p *pass) end() {
	name := p.toks.TagName()
	if lookup(name).flags&fBr != 0 {
		p.start() // </br> is <br>
		return
	}
	n := nameOf(name)
	for i := len(p.stack) - 1; i >= 0; i-- {
		if p.stack[i].name == n {
			p.closeTo(i)
			return
		}
	}
}

// implyEnd closes what the start of block t closes in HTML: an open p,
// the previous item of the same list, the previous cell or row of the
// same table.
func (p *pass) implyEnd(t tag) {
	for i := len(p.stack) - 1; i >= 0; i-- {
		if f := p.stack[i].flags; f&fP != 0 {
			p.closeTo(i)
			break
		} else if f&fBlock != 0 {
			break
		}
	}
	var closes, stop uint16
	switch {
	case t.flags&fItem != 0:
		closes, stop = fItem, fList|fTable|fCell
	case t.flags&fCell != 0:
		closes, stop = fCell, fRow|fTable
	case t.flags&fRow != 0:
		closes, stop = fRow, fTable
	default:
		return
	}
	for i := len(p.stack) - 1; i >= 0; i-- {
		if f := p.stack[i].flags; f&closes != 0 {
			p.closeTo(i)
			return
		} else if f&stop != 0 {
			return
		}
	}
}

// innerNode returns the innermost open container, or -1.
func (p *pass) innerNode() int32 {
	for i := len(p.stack) - 1; i >= 0; i-- {
		if p.stack[i].node >= 0 {
			return p.stack[i].node
		}
	}
	return -1
}

// flush ends the block under way, if it has text.
func (p *pass) flush() {
	text := bytes.TrimRight(p.buf, " \n")
	if p.pre == 0 {
		text = bytes.TrimLeft(text, " \n")
	}
	if len(bytes.TrimSpace(text)) == 0 {
		p.buf, p.links = p.buf[:0], 0
		return
	}
	b := rawBlock{node: p.innerNode(), chars: int32(utf8.RuneCount(text)),
		links: int32(min(p.links, len(text))), boiler: p.boilerMask(), commas: int32(commas(text))}
	b.from = int32(len(p.texts))
	p.texts = append(p.texts, text...)
	b.to = int32(len(p.texts))
	p.kind(&b.Block)
	if b.links > 0 {
		b.links = int32(utf8.RuneCount(text[:b.links]))
	}
	p.blocks = append(p.blocks, b)
	p.buf, p.links = p.buf[:0], 0
}

// setTexts gives the blocks their texts, all in one string.
func (p *pass) setTexts() {
	all := string(p.texts)
	for i := range p.blocks {
		b := &p.blocks[i]
		b.Text = all[b.from:b.to]
	}
}

// kind sets b's kind from the open elements: code inside pre, else the
// innermost block element's kind.
func (p *pass) kind(b *Block) {
	if p.pre > 0 {
		b.Kind = Code
		return
	}
	for i := len(p.stack) - 1; i >= 0; i-- {
		e := p.stack[i]
		switch {
		case e.heading > 0:
			b.Kind, b.Level = Heading, int(e.heading)
			return
		case e.flags&fItem != 0:
			b.Kind = ListItem
			for _, o := range p.stack[:i] {
				if o.flags&fList != 0 {
					b.Level++
					b.Ordered = o.name == nameOL
				}
			}
			return
		case e.flags&fCell != 0:
			b.Kind, b.Row, b.Header = Cell, p.row, e.name == nameTH
			return
		case e.flags&fQuote != 0:
			b.Kind = Quote
			return
		}
	}
	b.Kind = Paragraph
}

// elementAttrs are the attributes start reads of an element, in the
// order of the indexes below.
var elementAttrs = [...]string{"hidden", "aria-hidden", "style", "role", "class", "id"}

// Indexes into elementAttrs.
const (
	attrHidden = iota
	attrAriaHidden
	attrStyle
	attrRole
	attrClass
	attrID
)

// hidden reports whether the start tag whose attributes are a (looked up
// by elementAttrs) hides its element: the hidden attribute,
// aria-hidden="true" or an inline display:none.
func (p *pass) hidden(a *parse.AttrValues) bool {
	if _, ok := a.Get(attrHidden); ok {
		return true
	}
	if v, _ := a.Get(attrAriaHidden); ascii.EqualFold(v, "true") {
		return true
	}
	v, _ := a.Get(attrStyle)
	if len(v) == 0 {
		return false
	}
	p.lower = appendLower(p.lower[:0], v)
	return hasDisplayNone(p.lower)
}

// hasDisplayNone reports whether the lower-cased style v says
// "display:none", spaces (U+0020 alone) ignored.
func hasDisplayNone(v []byte) bool {
	const want = "display:none"
	for i := bytes.IndexByte(v, 'd'); i >= 0; i = indexByteFrom(v, i+1, 'd') {
		n := 0
		for j := i; j < len(v) && n < len(want); j++ {
			if v[j] == ' ' {
				continue
			}
			if v[j] != want[n] {
				break
			}
			n++
		}
		if n == len(want) {
			return true
		}
	}
	return false
}

// indexByteFrom returns the index of the first c in v at or after i, or -1.
func indexByteFrom(v []byte, i int, c byte) int {
	if j := bytes.IndexByte(v[i:], c); j >= 0 {
		return i + j
	}
	return -1
}

// elemName is an element's name as the stack keeps it, without
// allocating for names of up to 8 bytes (the bytes packed in short) and
// for the longer ones lookup knows. Names never hold a NUL (the scanner
// makes it U+FFFD), so two names are equal when their elemNames are.
type elemName struct {
	short uint64
	long  string // a name of more than 8 bytes
}

// The names kind compares.
var (
	nameOL = nameOf([]byte("ol"))
	nameTH = nameOf([]byte("th"))
)

// nameOf returns the elemName of name.
func nameOf(name []byte) elemName {
	if len(name) > 8 {
		switch string(name) {
		case "blockquote":
			return elemName{long: "blockquote"}
		case "figcaption":
			return elemName{long: "figcaption"}
		}
		return elemName{long: string(name)}
	}
	var n elemName
	for i, c := range name {
		n.short |= uint64(c) << (8 * i)
	}
	return n
}

// boilerMask returns the reasons the block under way is boilerplate.
func (p *pass) boilerMask() uint8 {
	var m uint8
	for i, n := range p.boiler {
		if n > 0 {
			m |= 1 << i
		}
	}
	return m
}
