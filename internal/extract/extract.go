package extract

import (
	"errors"
	"slices"
	"strings"

	"github.com/petrel-crawler/petrel/internal/parse"
)

// Kind is the kind of a Block.
type Kind uint8

// The kinds of blocks.
const (
	Paragraph Kind = iota // a paragraph, or text directly in a container
	Heading               // h1 to h6: Level is 1 to 6
	ListItem              // li, dt or dd: Level is the list's depth, 1 for the outermost
	Code                  // pre: Text keeps its white space
	Quote                 // text of a blockquote
	Cell                  // a td or th: Row numbers its row within the Doc
)

// Block is one piece of the main text.
type Block struct {
	Kind Kind
	// Level is a heading's level (1–6), a list item's depth (1 for the
	// outermost list); 0 otherwise.
	Level int
	// Ordered: a list item of an ol.
	Ordered bool
	// Row numbers a Cell's table row (cells of one row share it, rows of
	// one table are consecutive numbers); Header marks a th.
	Row    int
	Header bool
	// Text is the block's text, white space collapsed to single spaces
	// (line breaks from <br> kept as "\n"), except in Code, which keeps
	// the page's.
	Text string
}

// Doc is the main text of a page. The zero value is a page without one.
type Doc struct {
	// Title is the headline: the first h1 of the main text (which is then
	// not among Blocks), else the page's <title>, white space collapsed
	// ("" if neither).
	Title string
	// Blocks are the main text's blocks in document order.
	Blocks []Block
}

// ErrNoMainText is returned by MainText for a page in which no main text
// was found (no text at all, or only boilerplate).
var ErrNoMainText = errors.New("extract: no main text found")

// MainText returns the main text of an HTML page. contentType is the
// page's Content-Type header ("" if none), which may name its character
// encoding; the page is decoded to UTF-8 as a browser decodes it. It never
// panics on arbitrary input; a page without main text gives a Doc with its
// title and ErrNoMainText.
func MainText(page []byte, contentType string) (Doc, error) {
	var e Extractor
	return e.MainText(page, contentType)
}

// An Extractor finds the main texts of pages as MainText does, one page
// at a time, keeping its buffers from one page to the next. The zero
// value is ready to use.
type Extractor struct {
	p pass
}

// MainText returns the main text of an HTML page, as the package's
// MainText. The Doc shares nothing with e.
func (e *Extractor) MainText(page []byte, contentType string) (Doc, error) {
	text, _ := parse.Decode(contentType, page)
	p := &e.p
	p.reset(len(text))
	p.run(text)
	d := Doc{Title: p.title, Blocks: p.choose()}
	for i, b := range d.Blocks {
		if b.Kind == Heading && b.Level == 1 {
			d.Title = oneLine(b.Text)
			d.Blocks = slices.Delete(d.Blocks, i, i+1) // Blocks are choose's own
			break
		}
	}
	if len(d.Blocks) == 0 {
		return d, ErrNoMainText
	}
	return d, nil
}

// Text renders the blocks as plain text: one block a line, a blank line
// between blocks that are not items of one list or cells of one row, the
// cells of a row separated by tabs. The title is not included.
func (d Doc) Text() string {
	return string(d.AppendText(make([]byte, 0, d.TextLen())))
}

// AppendText appends the blocks rendered as Text renders them to b and
// returns the extended buffer.
func (d Doc) AppendText(b []byte) []byte {
	for i, bl := range d.Blocks {
		if i > 0 {
			b = append(b, separator(d.Blocks[i-1], bl)...)
		}
		b = append(b, bl.Text...)
	}
	return b
}

// TextLen returns the length in bytes of Text.
func (d Doc) TextLen() int {
	n := 0
	for i, bl := range d.Blocks {
		if i > 0 {
			n += len(separator(d.Blocks[i-1], bl))
		}
		n += len(bl.Text)
	}
	return n
}

// separator is what Text writes between the blocks prev and bl.
func separator(prev, bl Block) string {
	switch {
	case bl.Kind == Cell && prev.Kind == Cell && prev.Row == bl.Row:
		return "\t"
	case bl.Kind == prev.Kind && (bl.Kind == ListItem || bl.Kind == Cell):
		return "\n"
	}
	return "\n\n"
}

// Markdown renders the title as a level-1 heading and the blocks as
// CommonMark: headings with #, list items with "-" or "1." indented by
// depth, code fenced with ```, quotations with "> ", the cells of
// consecutive rows as a pipe table whose first row is the header row.
func (d Doc) Markdown() string {
	var b strings.Builder
	if d.Title != "" {
		b.WriteString("# ")
		b.WriteString(oneLine(d.Title))
		b.WriteString("\n")
	}
	for i := 0; i < len(d.Blocks); {
		bl := d.Blocks[i]
		sameList := i > 0 && bl.Kind == ListItem && d.Blocks[i-1].Kind == ListItem
		if b.Len() > 0 && !sameList {
			b.WriteByte('\n')
		}
		if bl.Kind == Cell {
			i = writeTable(&b, d.Blocks, i)
			continue
		}
		writeMarkdown(&b, bl)
		i++
	}
	return b.String()
}

// writeMarkdown writes one block that is not a Cell.
func writeMarkdown(b *strings.Builder, bl Block) {
	switch bl.Kind {
	case Heading:
		b.WriteString(strings.Repeat("#", min(max(bl.Level, 1), 6)))
		b.WriteByte(' ')
		b.WriteString(oneLine(bl.Text))
	case ListItem:
		b.WriteString(strings.Repeat("  ", max(bl.Level-1, 0)))
		if bl.Ordered {
			b.WriteString("1. ")
		} else {
			b.WriteString("- ")
		}
		b.WriteString(oneLine(bl.Text))
	case Code:
		b.WriteString("```\n")
		b.WriteString(strings.TrimRight(bl.Text, "\n"))
		b.WriteString("\n```")
	case Quote:
		b.WriteString("> ")
		b.WriteString(strings.ReplaceAll(bl.Text, "\n", "\n> "))
	default:
		b.WriteString(strings.ReplaceAll(bl.Text, "\n", "  \n"))
	}
	b.WriteByte('\n')
}

// writeTable writes the cells from blocks[i] on whose rows follow one
// another as a pipe table, and returns the index of the block after them.
func writeTable(b *strings.Builder, blocks []Block, i int) int {
	first := blocks[i].Row
	row, cells := first, 0
	b.WriteByte('|')
	for ; i < len(blocks) && blocks[i].Kind == Cell; i++ {
		bl := blocks[i]
		if bl.Row != row {
			if bl.Row != row+1 {
				break
			}
			b.WriteByte('\n')
			if row == first {
				b.WriteString("|" + strings.Repeat(" --- |", max(cells, 1)) + "\n")
			}
			b.WriteByte('|')
			row, cells = bl.Row, 0
		}
		b.WriteByte(' ')
		b.WriteString(strings.ReplaceAll(oneLine(bl.Text), "|", `\|`))
		b.WriteString(" |")
		cells++
	}
	b.WriteByte('\n')
	return i
}

// oneLine returns s with its line breaks turned into spaces.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
