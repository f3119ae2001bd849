package testweb

import (
	"bytes"
	"strconv"
)

// Real-shape pages are assembled, not written word by word: the filler
// (sections of text with inline SVG icons, tables, forms, cards without
// links, inline scripts and style sheets) comes from realBlocks blocks
// made once per web, so that serving a 100 KiB page costs a copy, not a
// rendering. The blocks are many and distinct enough (about 1 MiB in
// all) that a page's compressed size is that of its text, not of repeats.
const realBlocks = 384

// makeBlocks builds the filler blocks of the real shape.
func (g *Gen) makeBlocks() [][]byte {
	out := make([][]byte, realBlocks)
	for i := range out {
		r := g.stream(tagPage, -1, i)
		var b bytes.Buffer
		switch i % 6 {
		case 0:
			g.blockStyle(&b, &r)
		case 1:
			g.blockScript(&b, &r)
		case 2:
			g.blockTable(&b, &r)
		case 3:
			g.blockForm(&b, &r)
		default:
			g.blockSection(&b, &r)
		}
		out[i] = b.Bytes()
	}
	return out
}

// classList writes n class names made of words, BEM-like.
func (g *Gen) classList(b *bytes.Buffer, r *stream, n int) {
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		w := g.word(r)
		b.WriteString(w)
		switch r.intn(3) {
		case 0:
			b.WriteString("__")
			b.WriteString(g.word(r))
		case 1:
			b.WriteString("--")
			b.WriteString(g.word(r))
		}
	}
}

func (g *Gen) blockStyle(b *bytes.Buffer, r *stream) {
	b.WriteString("<style id=\"")
	b.WriteString(g.word(r))
	b.WriteString("-inline-css\">\n")
	for range 20 + r.intn(60) {
		b.WriteByte('.')
		g.classList(b, r, 1)
		b.WriteString(">.")
		b.WriteString(g.word(r))
		b.WriteString("{display:flex;margin:0 ")
		b.WriteString(strconv.Itoa(r.intn(48)))
		b.WriteString("px;padding:")
		b.WriteString(strconv.Itoa(r.intn(32)))
		b.WriteString("px ")
		b.WriteString(strconv.Itoa(r.intn(32)))
		b.WriteString("px;color:#")
		b.WriteString(strconv.FormatUint(uint64(r.intn(1<<24)), 16))
		b.WriteString(";font:")
		b.WriteString(strconv.Itoa(12 + r.intn(12)))
		b.WriteString("px/1.5 var(--")
		b.WriteString(g.word(r))
		b.WriteString("-font),sans-serif}\n")
	}
	b.WriteString("</style>\n")
}

func (g *Gen) blockScript(b *bytes.Buffer, r *stream) {
	b.WriteString("<script>window.__")
	b.WriteString(g.word(r))
	b.WriteString("=window.__")
	b.WriteString(g.word(r))
	b.WriteString("||{};(function(w,d){var s={")
	for i := range 10 + r.intn(40) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.WriteString(g.word(r))
		b.WriteString("\":{\"id\":")
		b.WriteString(strconv.Itoa(r.intn(1 << 20)))
		b.WriteString(",\"label\":\"")
		g.writeWords(b, r, 1+r.intn(4))
		b.WriteString("\",\"on\":")
		b.WriteString([]string{"true", "false"}[r.intn(2)])
		b.WriteByte('}')
	}
	b.WriteString("};for(var k in s){if(s[k].on&&d.querySelector('[data-")
	b.WriteString(g.word(r))
	b.WriteString("=\"'+k+'\"]')){w.dataLayer=w.dataLayer||[];w.dataLayer.push({event:'")
	b.WriteString(g.word(r))
	b.WriteString("',id:s[k].id});}}})(window,document);</script>\n")
}

func (g *Gen) blockTable(b *bytes.Buffer, r *stream) {
	b.WriteString("<table class=\"")
	g.classList(b, r, 3)
	b.WriteString("\" role=\"table\"><thead><tr>")
	cols := 3 + r.intn(4)
	for range cols {
		b.WriteString("<th scope=\"col\" class=\"")
		g.classList(b, r, 2)
		b.WriteString("\">")
		b.WriteString(g.word(r))
		b.WriteString("</th>")
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for range 5 + r.intn(20) {
		b.WriteString("<tr>")
		for range cols {
			b.WriteString("<td data-label=\"")
			b.WriteString(g.word(r))
			b.WriteString("\">")
			g.writeWords(b, r, 1+r.intn(3))
			b.WriteString("</td>")
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table>\n")
}

func (g *Gen) blockForm(b *bytes.Buffer, r *stream) {
	b.WriteString("<form class=\"")
	g.classList(b, r, 3)
	b.WriteString("\" method=\"post\" data-")
	b.WriteString(g.word(r))
	b.WriteString("=\"1\" novalidate>\n")
	for range 3 + r.intn(6) {
		w := g.word(r)
		b.WriteString("<div class=\"")
		g.classList(b, r, 4)
		b.WriteString("\"><label for=\"f-")
		b.WriteString(w)
		b.WriteString("\" class=\"")
		g.classList(b, r, 2)
		b.WriteString("\">")
		g.writeWords(b, r, 2+r.intn(3))
		b.WriteString("</label><input type=\"text\" id=\"f-")
		b.WriteString(w)
		b.WriteString("\" name=\"")
		b.WriteString(w)
		b.WriteString("\" autocomplete=\"off\" aria-required=\"true\" aria-describedby=\"h-")
		b.WriteString(w)
		b.WriteString("\" placeholder=\"")
		g.writeWords(b, r, 2)
		b.WriteString("\"></div>\n")
	}
	b.WriteString("<button type=\"submit\" class=\"")
	g.classList(b, r, 3)
	b.WriteString("\">")
	b.WriteString(g.word(r))
	b.WriteString("</button></form>\n")
}

func (g *Gen) blockSection(b *bytes.Buffer, r *stream) {
	b.WriteString("<section class=\"")
	g.classList(b, r, 4)
	b.WriteString("\" data-component=\"")
	b.WriteString(g.word(r))
	b.WriteString("\" aria-labelledby=\"h-")
	b.WriteString(g.word(r))
	b.WriteString("\">\n<svg class=\"icon icon-")
	b.WriteString(g.word(r))
	b.WriteString("\" viewBox=\"0 0 24 24\" width=\"24\" height=\"24\" aria-hidden=\"true\" focusable=\"false\"><path d=\"")
	for range 8 + r.intn(24) {
		b.WriteString([]string{"M", "L", "C", "l", "c", "h", "v"}[r.intn(7)])
		b.WriteString(strconv.Itoa(r.intn(24)))
		b.WriteByte('.')
		b.WriteString(strconv.Itoa(r.intn(100)))
		b.WriteByte(' ')
		b.WriteString(strconv.Itoa(r.intn(24)))
		b.WriteByte('.')
		b.WriteString(strconv.Itoa(r.intn(100)))
	}
	b.WriteString("z\"/></svg>\n<h2>")
	g.writeWords(b, r, 2+r.intn(5))
	b.WriteString("</h2>\n")
	for range 2 + r.intn(5) {
		b.WriteString("<div class=\"")
		g.classList(b, r, 3)
		b.WriteString("\" style=\"--")
		b.WriteString(g.word(r))
		b.WriteString(":")
		b.WriteString(strconv.Itoa(r.intn(100)))
		b.WriteString("%\"><p>")
		g.writeWords(b, r, 20+r.intn(60))
		b.WriteString(".</p></div>\n")
	}
	b.WriteString("</section>\n")
}

// renderReal appends the HTML of page p of host h in the real shape: a
// head with meta tags and inline style and script, a navigation bar and
// cards holding the page's links (spread through the page), filler blocks
// up to the page's size, and a footer.
func (g *Gen) renderReal(b *bytes.Buffer, h, p int) {
	r := g.stream(tagPage, h, -1-p)
	start := b.Len()
	size := g.pageBytes(h, p)
	links := g.links(make([]genLink, 0, g.linkCount(size)+2), h, p)
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\" class=\"no-js\" data-theme=\"light\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1, viewport-fit=cover\">\n<title>")
	g.writeWords(b, &r, 3+r.intn(6))
	b.WriteString("</title>\n<meta name=\"description\" content=\"")
	g.writeWords(b, &r, 15+r.intn(15))
	b.WriteString("\">\n<meta property=\"og:type\" content=\"article\">\n<meta property=\"og:title\" content=\"")
	g.writeWords(b, &r, 3+r.intn(6))
	b.WriteString("\">\n<meta name=\"twitter:card\" content=\"summary_large_image\">\n<meta name=\"generator\" content=\"Petrel generated web\">\n")
	b.Write(g.blocks[6*r.intn(realBlocks/6)])   // a style block
	b.Write(g.blocks[6*r.intn(realBlocks/6)+1]) // a script block
	b.WriteString("</head>\n<body class=\"")
	g.classList(b, &r, 6)
	b.WriteString("\">\n<header class=\"site-header\" role=\"banner\"><nav class=\"")
	g.classList(b, &r, 3)
	b.WriteString("\" aria-label=\"Main\"><ul class=\"menu\">\n")
	nav := min(len(links), 4)
	for _, l := range links[:nav] {
		b.WriteString("<li class=\"menu-item\">")
		g.realAnchor(b, &r, h, l, "menu-link")
		b.WriteString("</li>\n")
	}
	b.WriteString("</ul></nav></header>\n<main id=\"content\">\n")
	rest := links[nav:]
	for i, l := range rest {
		b.WriteString("<article class=\"")
		g.classList(b, &r, 4)
		b.WriteString("\" data-id=\"")
		b.WriteString(strconv.Itoa(r.intn(1 << 24)))
		b.WriteString("\"><h3>")
		g.realAnchor(b, &r, h, l, "card-link")
		b.WriteString("</h3><p>")
		g.writeWords(b, &r, 8+r.intn(16))
		b.WriteString(".</p></article>\n")
		for b.Len()-start < (size-512)*(i+1)/len(rest) {
			b.Write(g.blocks[r.intn(realBlocks)])
		}
	}
	for b.Len()-start < size-512 {
		b.Write(g.blocks[r.intn(realBlocks)])
	}
	b.WriteString("</main>\n<footer class=\"site-footer\" role=\"contentinfo\"><p>")
	g.writeWords(b, &r, 6)
	b.WriteString("</p></footer>\n")
	b.Write(g.blocks[6*r.intn(realBlocks/6)+1])
	b.WriteString("</body>\n</html>\n")
}

// realAnchor writes one link with a real page's attribute list.
func (g *Gen) realAnchor(b *bytes.Buffer, r *stream, h int, l genLink, class string) {
	b.WriteString("<a href=\"")
	g.writeHref(b, h, l)
	b.WriteString("\" class=\"")
	b.WriteString(class)
	b.WriteByte(' ')
	g.classList(b, r, 2)
	b.WriteString("\" data-track=\"")
	b.WriteString(g.word(r))
	b.WriteString("\" data-position=\"")
	b.WriteString(strconv.Itoa(r.intn(100)))
	b.WriteString("\" title=\"")
	g.writeWords(b, r, 2+r.intn(4))
	b.WriteString("\"")
	if l.host != h {
		b.WriteString(" rel=\"noopener\" target=\"_blank\"")
	}
	b.WriteString(">")
	g.writeWords(b, r, 1+r.intn(4))
	b.WriteString("</a>")
}
