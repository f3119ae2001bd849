package parse

import (
	"bytes"
	"net/http"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"

	"github.com/petrel-crawler/petrel/internal/ascii"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// DefaultMaxLinks is the outdegree cap used when Options.MaxLinks is not
// positive.
const DefaultMaxLinks = 5000

// maxTextCap bounds the room Options.MaxText reserves for the text at
// the start of a pass.
const maxTextCap = 64 << 10

// MaxTitle is the longest Result.Title kept, in bytes; a longer title is
// cut at a character boundary.
const MaxTitle = 1024

// Options controls link extraction.
type Options struct {
	MaxLinks int  // outdegree cap (default 5000 when 0); links beyond it are counted, not returned; requisites have a cap of their own of the same size
	Embeds   bool // also extract the page's requisites into Result.Embeds
	// JSLiterals (with Embeds) also takes as requisites the string
	// literals of the page's inline scripts that look like one (see JS),
	// resolved against the page's base URL.
	JSLiterals bool
	// Meta, when not nil, is reset and filled in the same pass with the
	// page's metadata elements and visible text (see PageMeta).
	Meta *PageMeta
	// MaxText, when positive, has the same pass keep the first MaxText
	// bytes of the page's visible text in Result.Text; 0 keeps none.
	MaxText int
}

// Result is what one pass over an HTML page yields.
type Result struct {
	Links         []urlx.URL // absolute, normalised, in document order, deduplicated within the page; rel=nofollow links and javascript:/mailto:/data:/tel: etc. excluded; empty when NoFollow
	Embeds        []urlx.URL // page requisites (Options.Embeds): absolute, normalised, in document order, deduplicated among themselves; kept when NoFollow
	Title         string     // text of the first <title>, white space stripped and collapsed, at most MaxTitle bytes
	NoFollow      bool       // <meta name=robots|petrel content=nofollow|none> or X-Robots-Tag header
	NoIndex       bool       // same, noindex|none
	Charset       string     // the charset used to decode, e.g. "utf-8", "windows-1252", "shift_jis"
	LinksDropped  int        // beyond MaxLinks
	NoFollowLinks int        // rel=nofollow links skipped
	BadLinks      int        // hrefs that did not parse / non-http(s)
	EmbedsDropped int        // requisites beyond the cap
	BadEmbeds     int        // requisite URLs that did not parse / non-http(s) (data: images among them)
	TextDigest    [16]byte   // BUbiNG-style content digest, see below
	SimHash       uint64     // 64-bit SimHash of the page text's word shingles (near-duplicate detection; see Hamming)
	Shingles      int        // shingles behind SimHash (few shingles make an unreliable fingerprint)
	// Text is the start of the page's visible text (Options.MaxText; nil
	// without it), as PageMeta.Text has it, cut at a character boundary
	// at most MaxText bytes in.
	Text []byte
}

// dedupMapThreshold is the number of kept links from which duplicates are
// looked up in a map rather than by a linear scan.
const dedupMapThreshold = 64

// initialLinks is the capacity of a page's link slice at its first link.
const initialLinks = 32

// extractor holds the state of one pass over a page.
type extractor struct {
	base     urlx.URL // current base: the page URL, or the first <base href>
	baseSet  bool     // a <base href> has been seen
	maxLinks int
	embeds   bool               // Options.Embeds
	jsLits   bool               // Options.JSLiterals (and Embeds)
	inScript bool               // the last <script> start tag is an inline script to search (jsLits)
	qenc     *urlx.QueryEncoder // the document's encoding for link queries (nil: UTF-8)
	titled   bool               // the first <title> has been read
	links    urlList
	reqs     urlList
	titleN   int            // bytes of titleArr used
	titleArr [MaxTitle]byte // the title's text so far, white space collapsed
	res      Result
	dig      digester
	sim      simhasher
	page     *PageMeta    // Options.Meta
	text     *visibleText // Options.MaxText, or nil
}

// urlList is the links (or requisites) of a page: in order, without
// duplicates, within a cap.
type urlList struct {
	urls    []urlx.URL
	seen    map[urlx.URL]struct{} // the urls, once there are many
	dropped int                   // beyond the cap
}

// HTML extracts, in one pass of a tokenizer that splits the page as
// golang.org/x/net/html's does (scan.go), the links, the robots directives
// and the content digest of the HTML page body fetched from base with
// response header header. body is the (content-decoded) payload as
// received; it is converted to UTF-8 for extraction only.
//
// HTML never fails: tag soup, invalid UTF-8 and unparsable links are
// tolerated, the latter counted in BadLinks.
func HTML(base urlx.URL, header http.Header, body []byte, opts Options) Result {
	var x extractor
	text := x.begin(base, header, body, opts)
	x.run(text)
	return x.finish()
}

// begin readies x for a pass over body and returns the text to walk: body
// converted to UTF-8.
func (x *extractor) begin(base urlx.URL, header http.Header, body []byte, opts Options) []byte {
	x.base, x.maxLinks, x.embeds = base, opts.MaxLinks, opts.Embeds
	x.jsLits = opts.Embeds && opts.JSLiterals
	if x.maxLinks <= 0 {
		x.maxLinks = DefaultMaxLinks
	}
	for _, v := range header.Values("X-Robots-Tag") {
		x.robotsHeader(v)
	}
	text, name := decode(header.Get("Content-Type"), body)
	x.res.Charset = name
	x.qenc = queryEncoder(name)
	x.dig.init(base)
	x.sim.init()
	if x.page = opts.Meta; x.page != nil {
		x.page.reset()
	}
	if opts.MaxText > 0 {
		x.text = &visibleText{max: opts.MaxText, b: make([]byte, 0, min(opts.MaxText, maxTextCap)+1)}
	}
	return text
}

// finish completes the pass and returns its Result.
func (x *extractor) finish() Result {
	x.res.TextDigest = x.dig.sum()
	x.res.SimHash, x.res.Shingles = x.sim.sum()
	if x.page != nil {
		x.page.finish()
	}
	if x.text != nil {
		x.res.Text = x.text.text()
	}
	x.res.Links, x.res.LinksDropped = x.links.urls, x.links.dropped
	x.res.Embeds, x.res.EmbedsDropped = x.reqs.urls, x.reqs.dropped
	if x.res.NoFollow {
		x.res.Links = nil
	}
	if x.titleN > 0 {
		x.res.Title = titleString(x.titleArr[:x.titleN])
	}
	return x.res
}

// decode determines the character encoding of body as the HTML standard
// does (byte order mark, Content-Type charset, <meta> in the first 1024
// bytes), except for the final sniff: a body that declares nothing is utf-8
// when the whole of it is valid UTF-8 (pure ASCII included), windows-1252
// otherwise. It returns body converted to UTF-8 and the encoding's name.
func decode(contentType string, body []byte) ([]byte, string) {
	enc, name, certain := charset.DetermineEncoding(body, contentType)
	if !certain && name == "windows-1252" && !declaresCharset(body) && utf8.Valid(body) {
		name = "utf-8"
	}
	if name == "utf-8" {
		return bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")), name
	}
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		return body, name
	}
	return out, name
}

// queryEncoder returns the encoder of the queries of a document in the
// encoding named name: nil for UTF-8 and for the encodings whose documents'
// queries are UTF-8 (UTF-16, replacement), as the HTML standard says.
func queryEncoder(name string) *urlx.QueryEncoder {
	switch name {
	case "utf-8", "utf-16le", "utf-16be", "replacement", "":
		return nil
	}
	enc, _ := charset.Lookup(name)
	return urlx.NewQueryEncoder(enc)
}

// declaresCharset reports whether the first 1024 bytes of body mention
// "charset", which a <meta> declaration needs.
func declaresCharset(body []byte) bool {
	if len(body) > 1024 {
		body = body[:1024]
	}
	for i := 0; i+7 <= len(body); i++ {
		if body[i]|0x20 == 'c' && ascii.EqualFold(body[i:i+7], "charset") {
			return true
		}
	}
	return false
}

// run walks the page text with the scanner, feeding the digest and the
// SimHash and acting on the tags that carry links or directives. It gives
// the Result that a walk with x/net/html's Tokenizer gives (the reference
// kept in reference_test.go).
func (x *extractor) run(text []byte) {
	var s scanner
	s.init(text)
	skipText := false // inside <script> or <style>
	after := afterOther
	for {
		k := s.next()
		prev := after
		after = afterOther
		switch k {
		case tokEOF:
			return
		case tokText:
			if prev == afterStyle && x.embeds {
				x.styleSheet(s.textRaw())
			}
			if prev == afterScript && x.inScript {
				x.scriptLiterals(s.textRaw())
			}
			switch {
			case prev == afterTitle && !x.titled:
				x.titled = true
				for t, ok := s.textPiece(); ok; t, ok = s.textPiece() {
					x.titleText(t)
					if !skipText {
						feedText(&x.dig, &x.sim, t)
					}
				}
			case !skipText:
				for t, ok := s.textPiece(); ok; t, ok = s.textPiece() {
					feedText(&x.dig, &x.sim, t)
					if x.page != nil {
						x.page.text(t)
					}
					if x.text != nil && !x.text.full() {
						x.text.add(t)
					}
				}
			}
		case tokStartTag:
			name := s.tagName()
			src := x.startTag(&s, name)
			if x.embeds && (s.mayEmbed || isEmbedTag(name)) || isLinkTag(name) {
				ea := s.embedAttrs()
				x.requisites(name, &ea)
			}
			if x.page != nil {
				x.page.startTag(&s, name)
			}
			if x.text != nil && !x.text.full() && isBlock(name) {
				x.text.lineBreak()
			}
			x.dig.tag(false, name, src)
			x.sim.endWord()
			switch string(name) {
			case "script", "style":
				skipText = skipText || !s.selfClosing()
			}
			after = afterTag(name)
		case tokEndTag:
			if x.page != nil {
				x.page.endTag(s.tagName())
			}
			if x.text != nil && !x.text.full() && isBlock(s.tagName()) {
				x.text.lineBreak()
			}
			x.dig.tag(true, s.tagName(), nil)
			x.sim.endWord()
			skipText = false
		}
	}
}

// startTag acts on the attributes of the start tag name that s holds and
// returns the src attribute of a frame or iframe (for the digest). The
// Tokenizer keeps only the first of duplicate attributes; s.attr does the
// same.
func (x *extractor) startTag(s *scanner, name []byte) (src []byte) {
	switch string(name) {
	case "a", "area":
		href, found := s.attr("href")
		if !found {
			return nil
		}
		if rel, _ := s.attr("rel"); hasToken(rel, "nofollow") {
			x.res.NoFollowLinks++
			return nil
		}
		x.link(href)
	case "frame", "iframe":
		if v, ok := s.attr("src"); ok {
			src = v
			x.link(v)
		}
	case "base":
		if v, ok := s.attr("href"); ok && !x.baseSet {
			x.baseSet = true // only the first <base href> counts
			if b, err := x.base.Resolve(string(v)); err == nil {
				x.base = b
			}
		}
	case "meta":
		content, hasContent := s.attr("content")
		if !hasContent {
			return nil
		}
		nameAttr, _ := s.attr("name")
		equiv, _ := s.attr("http-equiv")
		x.meta(nameAttr, equiv, content)
	}
	return src
}

// meta applies a <meta> tag with a content attribute: a refresh is a link,
// a robots (or petrel) directive applies to the page.
func (x *extractor) meta(nameAttr, equiv, content []byte) {
	switch {
	case ascii.EqualFold(equiv, "refresh"):
		if u, ok := refreshURL(content); ok {
			x.link(u)
		}
	case ascii.EqualFold(nameAttr, "robots"), ascii.EqualFold(nameAttr, "petrel"):
		x.robots(content)
	}
}

// link resolves ref against the current base and records it as a link.
func (x *extractor) link(ref []byte) {
	u, err := x.resolve(ref)
	if err != nil {
		x.res.BadLinks++
		return
	}
	x.links.add(u, x.maxLinks)
}

// embed resolves ref against the current base and records it as a
// requisite.
func (x *extractor) embed(ref []byte) {
	u, err := x.resolve(ref)
	if err != nil {
		x.res.BadEmbeds++
		return
	}
	x.reqs.add(u, x.maxLinks)
}

// resolve resolves ref against the current base, its query in the
// document's encoding.
func (x *extractor) resolve(ref []byte) (urlx.URL, error) {
	if x.qenc != nil {
		return x.base.ResolveEncoded(string(ref), x.qenc)
	}
	return x.base.Resolve(string(ref))
}

// add appends u unless it is there already or the list holds max URLs
// (then it counts it as dropped).
func (l *urlList) add(u urlx.URL, max int) {
	if l.has(u) {
		return
	}
	if len(l.urls) >= max {
		l.dropped++
		return
	}
	if l.urls == nil {
		// Most pages have tens of links: one allocation instead of a
		// doubling from one.
		l.urls = make([]urlx.URL, 0, min(initialLinks, max))
	}
	l.urls = append(l.urls, u)
	if l.seen != nil {
		l.seen[u] = struct{}{}
	}
}

// has reports whether u is already in the list.
func (l *urlList) has(u urlx.URL) bool {
	if l.seen != nil {
		_, ok := l.seen[u]
		return ok
	}
	for i := range l.urls {
		// The path and query first: links of a page mostly share the rest.
		if v := &l.urls[i]; v.PathQuery == u.PathQuery && *v == u {
			return true
		}
	}
	if len(l.urls) >= dedupMapThreshold {
		l.seen = make(map[urlx.URL]struct{}, 2*len(l.urls))
		for _, v := range l.urls {
			l.seen[v] = struct{}{}
		}
	}
	return false
}

// robots applies the directives of a robots meta tag's content.
func (x *extractor) robots(content []byte) {
	for f, rest := nextField(content); f != nil; f, rest = nextField(rest) {
		switch {
		case ascii.EqualFold(f, "nofollow"):
			x.res.NoFollow = true
		case ascii.EqualFold(f, "noindex"):
			x.res.NoIndex = true
		case ascii.EqualFold(f, "none"):
			x.res.NoFollow, x.res.NoIndex = true, true
		}
	}
}

// robotsHeader applies one X-Robots-Tag header value. A value scoped to a
// user agent ("otherbot: noindex") applies only when the agent is "petrel"
// or "robots".
func (x *extractor) robotsHeader(v string) {
	if i := strings.IndexByte(v, ':'); i >= 0 {
		agent := strings.ToLower(strings.TrimSpace(v[:i]))
		if agent != "" && !strings.ContainsAny(agent, " ,") && !isDirective(agent) {
			if agent != "petrel" && agent != "robots" {
				return
			}
			v = v[i+1:]
		}
	}
	x.robots([]byte(v))
}

func isDirective(s string) bool {
	switch s {
	case "all", "noindex", "nofollow", "none", "noarchive", "nosnippet", "notranslate",
		"noimageindex", "unavailable_after", "max-snippet", "max-image-preview", "max-video-preview",
		"indexifembedded", "nositelinkssearchbox", "nocache":
		return true
	}
	return false
}

func isSep(r byte) bool {
	return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f'
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}

// hasToken reports whether the space-separated list v contains tok, ignoring
// ASCII case.
func hasToken(v []byte, tok string) bool {
	for f, rest := nextField(v); f != nil; f, rest = nextField(rest) {
		if ascii.EqualFold(f, tok) {
			return true
		}
	}
	return false
}

// nextField returns the first field of v, a list separated by runs of
// commas and white space (isSep), and what follows it; f is nil when v holds
// no more fields. Unlike bytes.FieldsFunc it does not allocate.
func nextField(v []byte) (f, rest []byte) {
	i := 0
	for i < len(v) && isSep(v[i]) {
		i++
	}
	if i == len(v) {
		return nil, nil
	}
	j := i + 1
	for j < len(v) && !isSep(v[j]) {
		j++
	}
	return v[i:j], v[j:]
}

// refreshURL extracts the URL of a <meta http-equiv=refresh> content value
// such as "0; url=/next" or "5, 'next.html'", as the HTML standard's
// shared declarative refresh steps do.
func refreshURL(c []byte) ([]byte, bool) {
	i, n := 0, len(c)
	skip := func() {
		for i < n && isSpace(c[i]) {
			i++
		}
	}
	skip()
	start := i
	for i < n && (c[i] >= '0' && c[i] <= '9' || c[i] == '.') {
		i++
	}
	if i == start {
		return nil, false
	}
	skip()
	if i < n && (c[i] == ';' || c[i] == ',') {
		i++
	} else if i < n {
		return nil, false
	}
	skip()
	if i == n {
		return nil, false // refresh of the page itself
	}
	if n-i >= 3 && ascii.EqualFold(c[i:i+3], "url") {
		j := i + 3
		for j < n && isSpace(c[j]) {
			j++
		}
		if j < n && c[j] == '=' {
			i = j + 1
			skip()
		}
	}
	u := c[i:]
	if len(u) > 0 && (u[0] == '"' || u[0] == '\'') {
		if k := bytes.IndexByte(u[1:], u[0]); k >= 0 {
			u = u[1 : 1+k]
		} else {
			u = u[1:]
		}
	}
	u = bytes.TrimRight(u, " \t\n\r\f")
	if len(u) == 0 {
		return nil, false
	}
	return u, true
}
