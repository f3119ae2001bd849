package testweb

import (
	"bytes"
	"strconv"
)

// genLink is one link of a generated page: the href as written (root-
// relative on the page's own host, absolute otherwise) and its anchor text.
type genLink struct {
	host, page int
	private    bool // a /private/ page that robots.txt disallows
	missing    bool // a page that does not exist (404)
	bare       bool // real shape: written with the bare name of a www host
	plain      bool // real shape: written http:// although the host is on HTTPS
}

// links appends the links of page p of host h to dst.
func (g *Gen) links(dst []genLink, h, p int) []genLink {
	r := g.stream(tagPage, h, p)
	size := g.Pages(h)
	dst = append(dst, genLink{host: h, page: 0})
	for i := 1; i <= 3; i++ {
		dst = append(dst, genLink{host: h, page: min(i, size-1)})
	}
	own := 6 // in ten links
	if g.real {
		own = 8
	}
	for range g.linkCount(g.pageBytes(h, p)) - 4 {
		t := h
		if r.intn(10) >= own {
			if r.intn(2) == 0 {
				t = r.intn(g.cfg.Hosts)
			} else {
				u := r.unit()
				t = min(int(float64(g.cfg.Hosts)*u*u*u*u), g.cfg.Hosts-1)
			}
		}
		u := r.unit()
		n := g.Pages(t)
		l := genLink{host: t, page: min(int(float64(n)*u*u), n-1)}
		if g.real && t != h {
			l.bare = r.intn(64) == 0 && bareName(g.Name(t)) != ""
			l.plain = !l.bare && r.intn(200) == 0 && g.traits(t).https
		}
		dst = append(dst, l)
	}
	if r.intn(8) == 0 {
		dst = append(dst, genLink{host: h, page: r.intn(1 << 20), private: true})
	}
	if r.intn(16) == 0 {
		dst = append(dst, genLink{host: h, page: size + r.intn(1<<20), missing: true})
	}
	return dst
}

// linkPath writes the path of l.
func (g *Gen) linkPath(b textWriter, l genLink) {
	switch {
	case l.private:
		b.WriteString("/private/")
		b.WriteString(strconv.FormatUint(uint64(l.page), 36))
		b.WriteString(".html")
	case l.missing:
		b.WriteString("/gone/")
		b.WriteString(strconv.FormatUint(uint64(l.page), 36))
		b.WriteString(".html")
	case l.page == 0:
		b.WriteByte('/')
	default:
		g.appendPath(b, l.host, l.page)
	}
}

// Links returns the absolute URLs page p of host h links to, in page order
// (repeats included), as a crawler normalises them.
func (g *Gen) Links(h, p int) []string {
	var out []string
	var b bytes.Buffer
	for _, l := range g.links(nil, h, p) {
		b.Reset()
		g.origin(&b, l.host, l.bare, l.plain)
		g.linkPath(&b, l)
		out = append(out, b.String())
	}
	return out
}

// writeHref writes the href of link l on a page of host h: root-relative
// on the page's own origin, absolute otherwise.
func (g *Gen) writeHref(b textWriter, h int, l genLink) {
	if l.host != h || l.bare || l.plain {
		g.origin(b, l.host, l.bare, l.plain)
	}
	g.linkPath(b, l)
}

// Render appends the HTML of page p of host h to b.
func (g *Gen) Render(b *bytes.Buffer, h, p int) {
	if g.real {
		g.renderReal(b, h, p)
		return
	}
	r := g.stream(tagPage, h, -1-p)
	start := b.Len()
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>")
	g.writeWords(b, &r, 3+r.intn(5))
	b.WriteString("</title>\n</head>\n<body>\n<h1>")
	g.writeWords(b, &r, 2+r.intn(4))
	b.WriteString("</h1>\n<p>")
	g.writeWords(b, &r, 10+r.intn(20))
	b.WriteString(".</p>\n<ul>\n")
	var buf [64]genLink
	for _, l := range g.links(buf[:0], h, p) {
		b.WriteString("<li><a href=\"")
		g.writeHref(b, h, l)
		b.WriteString("\">")
		g.writeWords(b, &r, 1+r.intn(2))
		b.WriteString("</a></li>\n")
	}
	b.WriteString("</ul>\n")
	for b.Len()-start < g.pageBytes(h, p)-60 {
		b.WriteString("<p>")
		g.writeWords(b, &r, 20+r.intn(30))
		b.WriteString(".</p>\n")
	}
	b.WriteString("<footer>Petrel generated web</footer>\n</body></html>\n")
}

// writeWords writes n words separated by spaces.
func (g *Gen) writeWords(b textWriter, r *stream, n int) {
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(g.word(r))
	}
}
