// Scanner: the HTML tokenizer of the extractor's hot path.
//
// scanner splits a page into the tokens the extractor acts on (text, start
// tags and end tags; comments, doctypes and bogus comments are consumed
// silently) exactly as golang.org/x/net/html's Tokenizer (v0.62.0, token.go)
// does, but over the page in memory and without allocating. It is a port of
// that tokenizer's Next, restricted to what changes a Result: every function
// below names the Tokenizer function it mirrors, and the differential tests
// (scan_test.go, FuzzScanAgrees) hold the two to the same Result.
//
// Invariants:
//   - The page is never written to. Tokens are spans of it; text is handed
//     out in pieces (textPiece) that are slices of the page or of a small
//     buffer holding one converted newline, replacement character or decoded
//     character reference, so that text never needs copying.
//   - Token boundaries are the Tokenizer's: a text token ends where a '<'
//     starts a tag, comment, doctype or bogus comment, and after a start tag
//     of a raw-text or RCDATA element the next token is that element's text.
//     Boundaries matter: newline conversion and character references do not
//     run across them.
//   - pos only moves forward. pos == len(b) means the Tokenizer's io.EOF:
//     only tokEOF follows. A tag cut off by the end of the page is the
//     Tokenizer's ErrorToken: it ends the page too (the tag is dropped).
//   - Attribute values are decoded only when asked for (attr), as TagAttr
//     would give them: NUL replaced, newlines converted, references decoded
//     by the attribute-value rules. The tokenizer keeps only the first of
//     duplicate attributes, so attr returns the first match.
//
// Allocation: none in the common case. A named character reference that is
// not in the small table of common ones (knownRef) has its expansion asked
// of html.UnescapeString (appendRefSlow), which keeps the result exact; a
// tag name longer than nameArr and decoded attribute values beyond vArr
// are allocated.
package parse

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"

	"github.com/petrel-crawler/petrel/internal/ascii"
)

// tokenKind is the kind of token scanner.next returns.
type tokenKind uint8

const (
	tokEOF      tokenKind = iota // end of the page, or a tag cut off by it
	tokText                      // text: read it with textPiece
	tokStartTag                  // start or self-closing tag: name, attr, selfClosing
	tokEndTag                    // end tag: name
	tokSkip                      // comment, doctype or bogus comment (internal to next)
)

// scanner is the state of one pass over a page. The zero value is not
// ready: call init.
type scanner struct {
	b   []byte // the page (UTF-8), never modified
	pos int    // start of the next token

	// rawTag is the lower-cased name of the raw-text or RCDATA element whose
	// text is the next token ("" for none), as Tokenizer.rawTag.
	rawTag string

	// The current token. A text token's raw text ends at end; a tag ends
	// at end, just past its '>'.
	end     int
	name    int // start of the tag's name
	nameEnd int // end of the tag's name
	attrs   int // position of the tag's first attribute, or of its '>'

	// mayEmbed: a key of the tag may be style, data-src or data-srcset
	// (mayBeEmbedAttr).
	mayEmbed bool
	nameArr  [32]byte // holds the name tagName returns, when short

	// Text decoding state of the current text token.
	refs   bool     // decode character references (not raw text)
	nul    bool     // replace NUL by U+FFFD (raw text and RCDATA)
	tp     int      // start of the next piece
	nextCR int      // index of the next '\r' at or after tp (end if none); -1: unknown
	nextRf int      // same for '&'
	nextNL int      // same for NUL
	pArr   [16]byte // holds the pieces textPiece makes, when short

	// vArr[:vn] holds the attribute values of the current tag that value
	// decoded (longer ones are allocated); they stay valid until the next
	// token.
	vn   int
	vArr [256]byte
}

// The scanner's buffers (nameArr, pArr, vArr) are arrays, and slices of them
// are only returned, never stored in the scanner: a scanner that pointed
// into itself would escape to the heap.

// init readies s to scan page b.
func (s *scanner) init(b []byte) {
	*s = scanner{b: b}
}

// next scans the next token and returns its kind. It mirrors Tokenizer.Next.
func (s *scanner) next() tokenKind {
	s.vn = 0
	if s.rawTag != "" && s.rawText() {
		return tokText
	}
	for {
		if k := s.markupOrText(); k != tokSkip {
			return k
		}
	}
}

// rawText scans the text of the raw-text or RCDATA element s.rawTag, as the
// first half of Tokenizer.Next does, and reports whether it is not empty.
// The element's text runs up to its end tag ("</" + rawTag, in any case,
// followed by white space, '/' or '>'), which is then scanned as a tag; a
// plaintext element never ends. Its NULs are replaced; references are
// decoded only in RCDATA (textarea, title).
func (s *scanner) rawText() bool {
	tag := s.rawTag
	start, end := s.pos, len(s.b)
	switch tag {
	case "plaintext":
		// rawTag stays set, like the Tokenizer's, but nothing follows.
	case "script":
		s.rawTag = ""
		end = scriptEnd(s.b, start)
	default:
		s.rawTag = ""
		end = rawEnd(s.b, start, tag)
	}
	if end == start {
		return false
	}
	s.pos = end
	s.setText(start, end, tag == "textarea" || tag == "title", true)
	return true
}

// markupOrText scans the token at s.pos outside raw text: a run of text, or
// the tag, comment or other markup that a '<' starts. It mirrors the main
// loop of Tokenizer.Next.
func (s *scanner) markupOrText() tokenKind {
	b, start := s.b, s.pos
	for p := start; ; {
		i := bytes.IndexByte(b[p:], '<')
		if i < 0 || p+i+1 == len(b) {
			break // text up to the end; a final '<' is text
		}
		p += i
		c := b[p+1]
		if !isLetter(c) && c != '/' && c != '!' && c != '?' {
			p++ // '<' not starting markup is text; rescan from the next byte
			continue
		}
		if p > start {
			s.pos = p
			s.setText(start, p, true, false)
			return tokText
		}
		return s.markup(p, c)
	}
	if start == len(b) {
		return tokEOF
	}
	s.pos = len(b)
	s.setText(start, len(b), true, false)
	return tokText
}

// markup scans the markup that starts at b[p] == '<', with c == b[p+1] a
// letter, '/', '!' or '?'.
func (s *scanner) markup(p int, c byte) tokenKind {
	b := s.b
	switch c {
	case '/':
		if p+2 == len(b) {
			// "</" at the end of the page is text.
			s.pos = len(b)
			s.setText(p, len(b), true, false)
			return tokText
		}
		switch c2 := b[p+2]; {
		case c2 == '>':
			s.pos = p + 3 // "</>" is no token at all
		case isLetter(c2):
			return s.tag(p, true)
		default:
			s.pos = closeAngle(b, p+2) // bogus comment, "</ x>"
		}
	case '!':
		s.pos = declarationEnd(b, p+2)
	case '?':
		s.pos = closeAngle(b, p+1) // bogus comment, "<?xml ...>"
	default:
		return s.tag(p, false)
	}
	return tokSkip
}

// setText makes b[start:end] the current token, a text token whose
// references are decoded when refs and whose NULs are replaced when nul.
func (s *scanner) setText(start, end int, refs, nul bool) {
	s.end = end
	s.refs, s.nul = refs, nul
	s.tp = start
	s.nextCR, s.nextRf, s.nextNL = -1, -1, -1
}

// tag scans the start tag (end false) or end tag at b[p] == '<', its name
// starting with a letter at b[p+1] (b[p+2] for an end tag). It mirrors
// Tokenizer.readStartTag and readTag; a tag the page cuts off ends the page.
func (s *scanner) tag(p int, end bool) tokenKind {
	b := s.b
	ns := p + 1
	if end {
		ns++
	}
	ne := ns + 1
	for ne < len(b) && byteClass[b[ne]]&clsNameEnd == 0 {
		ne++
	}
	q := skipSpace(b, ne)
	attrs := q
	mayEmbed := false
	for q < len(b) && b[q] != '>' {
		var ks, ke int
		ks, ke, _, _, q = nextAttr(b, q)
		mayEmbed = mayEmbed || mayBeEmbedAttr(ke-ks, b[ks])
	}
	if q == len(b) {
		s.pos = len(b) // the Tokenizer's ErrorToken
		return tokEOF
	}
	s.pos, s.end = q+1, q+1
	s.name, s.nameEnd, s.attrs = ns, ne, attrs
	s.mayEmbed = mayEmbed
	if end {
		return tokEndTag
	}
	s.rawTag = rawTextElement(b[ns:ne])
	return tokStartTag
}

// tagName returns the current tag's name lower-cased (ASCII) with NULs
// replaced by U+FFFD, as Tokenizer.TagName gives it. The name is valid until
// the next call.
func (s *scanner) tagName() []byte {
	name := s.nameArr[:0]
	for _, c := range s.b[s.name:s.nameEnd] {
		switch {
		case c == 0:
			name = append(name, "\ufffd"...)
		case 'A' <= c && c <= 'Z':
			name = append(name, c+'a'-'A')
		default:
			name = append(name, c)
		}
	}
	return name
}

// rawTextElements are the elements whose content the Tokenizer reads as raw
// text or RCDATA.
var rawTextElements = [...]string{
	"iframe", "noembed", "noframes", "noscript", "plaintext",
	"script", "style", "textarea", "title", "xmp",
}

// rawTextElement returns the element of rawTextElements that name is, in
// any ASCII case, or "". Mirrors Tokenizer.readStartTag's startTagIn.
func rawTextElement(name []byte) string {
	if len(name) < len("xmp") || len(name) > len("plaintext") {
		return ""
	}
	for _, e := range rawTextElements {
		if ascii.EqualFold(name, e) {
			return e
		}
	}
	return ""
}

// nextAttr scans the attribute at b[p], a byte inside a tag that is neither
// white space nor '>', as Tokenizer.readTagAttrKey and readTagAttrVal do.
// b[ks:ke] is its key (empty for a stray '/'), b[vs:ve] its raw value
// (empty when missing) and next the position of the following attribute or
// of the tag's '>' (len(b) when the page ends first).
func nextAttr(b []byte, p int) (ks, ke, vs, ve, next int) {
	ks, ke = p, attrKeyEnd(b, p)
	vs, ve, next = attrVal(b, ke)
	return ks, ke, vs, ve, skipSpace(b, next)
}

// attrKeyEnd returns the end of the attribute key starting at b[p]. A '='
// is part of the key only as its first byte. Mirrors readTagAttrKey.
func attrKeyEnd(b []byte, p int) int {
	i := p
	if i < len(b) && b[i] == '=' {
		i++
	}
	for i < len(b) && byteClass[b[i]]&clsKeyEnd == 0 {
		i++
	}
	return i
}

// attrVal scans the value that may follow a key ending at b[p]: the value
// is b[vs:ve] (vs == ve == p when there is none) and scanning resumes at
// next. Mirrors readTagAttrVal, including where the Tokenizer's value span
// lies, which decides whether a tag ending in "/>" is self-closing.
func attrVal(b []byte, p int) (vs, ve, next int) {
	vs, ve = p, p
	q := skipSpace(b, p)
	if q == len(b) {
		return vs, ve, q
	}
	switch b[q] {
	case '/':
		return vs, ve, q + 1 // "<a b/>": consumed, as the Tokenizer does
	case '=':
	default:
		return vs, ve, q // a key without a value; q starts the next key
	}
	q = skipSpace(b, q+1)
	if q == len(b) {
		return vs, ve, q
	}
	switch quote := b[q]; quote {
	case '>':
		return vs, ve, q
	case '"', '\'':
		i := bytes.IndexByte(b[q+1:], quote)
		if i < 0 {
			return q + 1, len(b), len(b)
		}
		return q + 1, q + 1 + i, q + 2 + i
	}
	i := q + 1
	for i < len(b) && byteClass[b[i]]&clsValueEnd == 0 {
		i++
	}
	switch {
	case i == len(b):
		return q, i, i
	case b[i] == '>':
		return q, i, i
	}
	return q, i, i + 1 // white space, consumed
}

// attr returns the value of the current start tag's first attribute whose
// key is key (lower-case ASCII) in any ASCII case, decoded as
// Tokenizer.TagAttr gives it (nil when empty), and whether there is one.
// Later duplicates are ignored, as the Tokenizer drops them.
func (s *scanner) attr(key string) ([]byte, bool) {
	b := s.b
	for p := s.attrs; b[p] != '>'; {
		ks, ke, vs, ve, next := nextAttr(b, p)
		if ascii.EqualFold(b[ks:ke], key) {
			return s.value(b[vs:ve]), true
		}
		p = next
	}
	return nil, false
}

// lookupAttrs returns, from one walk of the current start tag, what attr
// returns of each of keys (lower-case ASCII, distinct, at most
// MaxAttrKeys). (Returned, not filled in through a pointer: values in
// vArr stored through one would move the scanner to the heap.)
func (s *scanner) lookupAttrs(keys []string) (a AttrValues) {
	b := s.b
	for p := s.attrs; b[p] != '>'; {
		ks, ke, vs, ve, next := nextAttr(b, p)
		for i, k := range keys {
			if a.has&(1<<i) == 0 && ascii.EqualFold(b[ks:ke], k) {
				a.has |= 1 << i
				a.v[i] = s.value(b[vs:ve])
				break
			}
		}
		p = next
	}
	return a
}

// embedAttrs returns, from one walk of the current start tag, the first
// value of each attribute that requisites reads. (Returned, not filled in
// through a pointer: values in vArr stored through one would move the
// scanner to the heap.)
func (s *scanner) embedAttrs() (e embedAttrs) {
	b := s.b
	for p := s.attrs; b[p] != '>'; {
		ks, ke, vs, ve, next := nextAttr(b, p)
		if k := embedAttrKey(b[ks:ke]); k >= 0 && e.has&(1<<k) == 0 {
			e.has |= 1 << k
			e.v[k] = s.value(b[vs:ve])
		}
		p = next
	}
	return e
}

// textRaw returns the current text token as it is in the page, before
// textPiece converts anything: newlines and NULs unconverted, references
// undecoded. Call it before textPiece.
func (s *scanner) textRaw() []byte {
	return s.b[s.tp:s.end]
}

// selfClosing reports whether the current start tag is self-closing as the
// Tokenizer decides it: its last byte before '>' is '/', and that '/' is not
// the last byte of the value of the last attribute it keeps (the first of
// each key, keys compared lower-cased; empty keys are dropped).
//
// Only the last attribute's value can end just before the '>' (as in
// "<a b=/>"): an earlier value ends before the next key starts. So the
// '/' is that value's when the last attribute ends there and is kept.
func (s *scanner) selfClosing() bool {
	b := s.b
	slash := s.end - 2
	if b[slash] != '/' {
		return false
	}
	ks, ke, ve := -1, -1, -1 // the last attribute
	for p := s.attrs; b[p] != '>'; {
		ks, ke, _, ve, p = nextAttr(b, p)
	}
	if ve-1 != slash || ke == ks {
		return true // no attribute, or its value ends elsewhere, or it has no key
	}
	return s.keySeen(b[ks:ke], ks) // a duplicate is dropped
}

// keySeen reports whether an attribute of the current tag before position
// before has key (compared lower-cased), that is whether the Tokenizer drops
// an attribute there with key as a duplicate.
func (s *scanner) keySeen(key []byte, before int) bool {
	b := s.b
	for p := s.attrs; p < before; {
		ks, ke, _, _, next := nextAttr(b, p)
		if ascii.EqualFoldAny(b[ks:ke], key) { // as the Tokenizer compares keys
			return true
		}
		p = next
	}
	return false
}

// value decodes the raw attribute value v as Tokenizer.TagAttr does: NULs
// replaced by U+FFFD, "\r\n" and "\r" turned into "\n", then character
// references decoded by the attribute-value rules. An empty value is nil
// (TagAttr's copy of an empty value is nil); a value needing no change is
// returned as is, others are decoded into vArr (or, when long, a new
// slice).
func (s *scanner) value(v []byte) []byte {
	if len(v) == 0 {
		return nil
	}
	if bytes.IndexByte(v, '&') < 0 && bytes.IndexByte(v, '\r') < 0 && bytes.IndexByte(v, 0) < 0 {
		return v
	}
	buf := s.vArr[s.vn:s.vn]
	out := appendValue(buf, v)
	if cap(out) == cap(buf) { // still in vArr
		s.vn += len(out)
	}
	return out[:len(out):len(out)]
}

// appendValue appends the raw attribute value v decoded to dst.
func appendValue(dst, v []byte) []byte {
	for i := 0; i < len(v); {
		switch c := v[i]; c {
		case 0:
			dst = append(dst, "\ufffd"...)
			i++
		case '\r':
			dst = append(dst, '\n')
			i++
			if i < len(v) && v[i] == '\n' {
				i++
			}
		case '&':
			var n int
			dst, n = appendCharRef(dst, v[i:], true)
			i += n
		default:
			dst = append(dst, c)
			i++
		}
	}
	return dst
}

// textPiece returns the next piece of the current text token's text, as
// Tokenizer.Text gives it whole, and false after the last piece. The
// concatenated pieces are the text with "\r\n" and "\r" turned into "\n",
// NULs replaced by U+FFFD in raw text and RCDATA, and character references
// decoded outside raw text. A piece is a slice of the page or of s.pArr,
// valid until the next call; the common text without any of '\r', '&' or
// NUL is one piece. textPiece does not allocate but for rare references
// (appendCharRef).
func (s *scanner) textPiece() ([]byte, bool) {
	p, end := s.tp, s.end
	if p >= end {
		return nil, false
	}
	if q := s.special(p); q > p {
		s.tp = q
		return s.b[p:q], true
	}
	piece := s.pArr[:0]
	switch s.b[p] {
	case '\r':
		s.tp = p + 1
		if p+1 < end && s.b[p+1] == '\n' {
			s.tp = p + 2
		}
		piece = append(piece, '\n')
	case 0:
		s.tp = p + 1
		piece = append(piece, "\ufffd"...)
	default: // '&'
		var n int
		piece, n = appendCharRef(piece, s.b[p:end], false)
		s.tp = p + n
	}
	return piece, true
}

// special returns the index of the first byte at or after p in the current
// text token that textPiece must convert, or the token's end. The next
// position of each such byte is kept, so a token is searched once for each.
func (s *scanner) special(p int) int {
	b, end := s.b, s.end
	if s.nextCR < p {
		s.nextCR = indexFrom(b, p, end, '\r')
	}
	q := s.nextCR
	if s.refs {
		if s.nextRf < p {
			s.nextRf = indexFrom(b, p, end, '&')
		}
		q = min(q, s.nextRf)
	}
	if s.nul {
		if s.nextNL < p {
			s.nextNL = indexFrom(b, p, end, 0)
		}
		q = min(q, s.nextNL)
	}
	return q
}

// indexFrom returns the index of the first c in b[p:end], or end.
func indexFrom(b []byte, p, end int, c byte) int {
	if i := bytes.IndexByte(b[p:end], c); i >= 0 {
		return p + i
	}
	return end
}

// scriptEnd returns the end of the script data starting at b[p]: the index
// of the "</script" that closes it, or len(b). It is Tokenizer.readScript's
// state machine, with the same quirks (the escaped "<!--" states and the
// double-escaped "<script>" inside them). It is longer than a screen to
// stay one loop over one switch with the tokenizer's states in its order,
// so that the two can be compared state by state.
func scriptEnd(b []byte, p int) int {
	const (
		data = iota
		lessThan
		endTagOpen
		escapeStart
		escapeStartDash
		escaped
		escapedDash
		escapedDashDash
		escapedLessThan
		escapedEndTagOpen
		doubleEscapeStart
		doubleEscaped
		doubleEscapedDash
		doubleEscapedDashDash
		doubleEscapedLessThan
		doubleEscapeEnd
	)
	n := len(b)
	st := data
	for {
		// Every state but data reads a byte first: at the end of the page
		// the script ends there.
		if st != data && p == n {
			return n
		}
		switch st {
		case data:
			i := bytes.IndexByte(b[p:], '<')
			if i < 0 {
				return n
			}
			p += i + 1
			st = lessThan
		case lessThan:
			switch b[p] {
			case '/':
				p++
				st = endTagOpen
			case '!':
				p++
				st = escapeStart
			default:
				st = data // reconsume
			}
		case endTagOpen, escapedEndTagOpen:
			q, ok := rawEndTag(b, p, "script")
			if ok {
				return p - 2
			}
			p = q
			if st == endTagOpen {
				st = data
			} else {
				st = escaped
			}
		case escapeStart, escapeStartDash:
			if b[p] != '-' {
				st = data // reconsume
				break
			}
			p++
			if st == escapeStart {
				st = escapeStartDash
			} else {
				st = escapedDashDash
			}
		case escaped, escapedDash, escapedDashDash:
			c := b[p]
			p++
			switch {
			case c == '-':
				st = min(st+1, escapedDashDash)
			case c == '<':
				st = escapedLessThan
			case c == '>' && st == escapedDashDash:
				st = data
			default:
				st = escaped
			}
		case escapedLessThan:
			switch c := b[p]; {
			case c == '/':
				p++
				st = escapedEndTagOpen
			case isLetter(c):
				st = doubleEscapeStart // the letter is read again there
			default:
				st = data // reconsume
			}
		case doubleEscapeStart:
			q, ok := matchFold(b, p, "script")
			p = q
			switch {
			case p == n:
				return n
			case !ok:
				st = escaped // reconsume the mismatch
			case isSpace(b[p]) || b[p] == '/' || b[p] == '>':
				p++
				st = doubleEscaped
			default:
				st = escaped // reconsume
			}
		case doubleEscaped, doubleEscapedDash, doubleEscapedDashDash:
			c := b[p]
			p++
			switch {
			case c == '-':
				st = min(st+1, doubleEscapedDashDash)
			case c == '<':
				st = doubleEscapedLessThan
			case c == '>' && st == doubleEscapedDashDash:
				st = data
			default:
				st = doubleEscaped
			}
		case doubleEscapedLessThan:
			if b[p] == '/' {
				p++
				st = doubleEscapeEnd
			} else {
				st = doubleEscaped // reconsume
			}
		case doubleEscapeEnd:
			q, ok := rawEndTag(b, p, "script")
			p = q
			if ok {
				st = escaped // past "</script>", still escaped
			} else {
				st = doubleEscaped
			}
		}
	}
}

// rawEnd returns the end of the raw text or RCDATA of element tag (not
// script) starting at b[p]: the index of the "</"+tag that closes it, or
// len(b). Mirrors Tokenizer.readRawOrRCDATA.
func rawEnd(b []byte, p int, tag string) int {
	n := len(b)
	for {
		i := bytes.IndexByte(b[p:], '<')
		if i < 0 {
			return n
		}
		p += i + 1
		if p == n {
			return n
		}
		if b[p] != '/' {
			continue // reconsume
		}
		p++
		q, ok := rawEndTag(b, p, tag)
		if ok {
			return p - 2
		}
		p = q
	}
}

// rawEndTag reports whether tag (lower-case) in any ASCII case and then
// white space, '/' or '>' start at b[p], just after a "</". If so q is past
// that delimiter; if not, q is where scanning resumes (the mismatching byte,
// or len(b)). Mirrors Tokenizer.readRawEndTag.
func rawEndTag(b []byte, p int, tag string) (q int, ok bool) {
	q, ok = matchFold(b, p, tag)
	if !ok || q == len(b) {
		return q, false
	}
	switch b[q] {
	case ' ', '\n', '\r', '\t', '\f', '/', '>':
		return q + 1, true
	}
	return q, false
}

// matchFold reports whether the lower-case letters s start at b[p] in any
// ASCII case. q is past them if so, at the first mismatching byte (or
// len(b)) if not.
func matchFold(b []byte, p int, s string) (q int, ok bool) {
	for i := 0; i < len(s); i++ {
		if p == len(b) {
			return p, false
		}
		if c := b[p]; c != s[i] && c != s[i]-('a'-'A') {
			return p, false
		}
		p++
	}
	return p, true
}

// declarationEnd returns the end of the markup declaration whose "<!" ends
// just before b[p]: a comment "<!--...", or a doctype or bogus comment that
// ends at the next '>'. Mirrors Tokenizer.readMarkupDeclaration (CDATA
// sections are bogus comments: the Tokenizer does not allow them by
// default).
func declarationEnd(b []byte, p int) int {
	if len(b)-p < 2 {
		return len(b)
	}
	if b[p] == '-' && b[p+1] == '-' {
		return commentEnd(b, p+2)
	}
	return closeAngle(b, p)
}

// commentEnd returns the end of the comment whose "<!--" ends just before
// b[p]: past the first "-->", "--!>", or '>' right after the opening
// ("<!-->", "<!--->"), or len(b). Mirrors Tokenizer.readComment.
func commentEnd(b []byte, p int) int {
	dashes, beginning := 0, true
	for p < len(b) {
		c := b[p]
		p++
		switch c {
		case '-':
			dashes++
			continue
		case '>':
			if dashes >= 2 || beginning {
				return p
			}
		case '!':
			if dashes >= 2 {
				if p == len(b) {
					return p
				}
				c = b[p]
				p++
				if c == '>' {
					return p
				}
				if c == '-' {
					dashes, beginning = 1, false
					continue
				}
			}
		}
		dashes, beginning = 0, false
	}
	return len(b)
}

// closeAngle returns the position past the first '>' at or after b[p], or
// len(b). Mirrors Tokenizer.readUntilCloseAngle.
func closeAngle(b []byte, p int) int {
	if i := bytes.IndexByte(b[p:], '>'); i >= 0 {
		return p + i + 1
	}
	return len(b)
}

// skipSpace returns the index of the first byte at or after p that is not
// HTML white space, or len(b).
func skipSpace(b []byte, p int) int {
	for p < len(b) && byteClass[b[p]]&clsSpace != 0 {
		p++
	}
	return p
}

// Byte classes of the tag scanner (byteClass): the bytes that end a tag
// name, an attribute key and an unquoted attribute value, and white space.
const (
	clsNameEnd  = 1 << iota // white space, '/', '>'
	clsKeyEnd               // white space, '/', '>', '='
	clsValueEnd             // white space, '>'
	clsSpace                // ' ', '\t', '\n', '\r', '\f'
)

// byteClass maps each byte to its classes; it is never written after
// initialisation.
var byteClass = func() (t [256]uint8) {
	for _, c := range []byte(" \t\n\r\f") {
		t[c] = clsNameEnd | clsKeyEnd | clsValueEnd | clsSpace
	}
	t['/'] = clsNameEnd | clsKeyEnd
	t['>'] = clsNameEnd | clsKeyEnd | clsValueEnd
	t['='] = clsKeyEnd
	return t
}()

func isLetter(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isAlnum(c byte) bool {
	return isLetter(c) || '0' <= c && c <= '9'
}

// appendCharRef decodes the character reference at the start of s (s[0] is
// '&'; s runs to the end of the text or attribute value) as x/net/html's
// unescapeEntity does, appends its expansion to dst and returns the number
// of bytes of s it stands for. When s starts no reference, that is '&' and
// 1. attr selects the attribute-value rules: a name without ';' followed by
// '=' is no reference, and a name is never matched by a prefix.
//
// The bytes after s[0] may still hold "\r" or NUL where the Tokenizer
// already has "\n" or U+FFFD: both end a reference alike, so the result is
// the same.
func appendCharRef(dst, s []byte, attr bool) ([]byte, int) {
	if len(s) <= 1 {
		return append(dst, '&'), 1
	}
	if s[1] == '#' {
		return appendNumRef(dst, s)
	}
	i := 1
	for i < len(s) && isAlnum(s[i]) {
		i++
	}
	if i < len(s) && s[i] == ';' {
		i++
	}
	name := s[1:i]
	if len(name) == 0 || attr && name[len(name)-1] != ';' && i < len(s) && s[i] == '=' {
		return append(dst, '&'), 1
	}
	if v, ok := knownRef(name); ok {
		return append(dst, v...), i
	}
	return appendRefSlow(dst, s[:i], attr), i
}

// appendNumRef decodes the numeric character reference ("&#...") at the
// start of s, as unescapeEntity does.
func appendNumRef(dst, s []byte) ([]byte, int) {
	if len(s) <= 2 {
		return append(dst, '&'), 1
	}
	i, hex := 2, false
	if s[i] == 'x' || s[i] == 'X' {
		i, hex = i+1, true
	}
	i0, x := i, rune(0)
	for ; i < len(s); i++ {
		d, ok := digitVal(s[i], hex)
		if !ok {
			break
		}
		if x <= utf8.MaxRune { // saturate: larger values are all invalid
			if hex {
				x = 16*x + d
			} else {
				x = 10*x + d
			}
		}
	}
	if i == i0 {
		return append(dst, '&'), 1
	}
	if i < len(s) && s[i] == ';' {
		i++
	}
	switch {
	case 0x80 <= x && x <= 0x9f:
		x = windows1252[x-0x80]
	case x == 0 || 0xd800 <= x && x <= 0xdfff || x > utf8.MaxRune:
		x = utf8.RuneError
	}
	return utf8.AppendRune(dst, x), i
}

// digitVal returns the value of the decimal (or, if hex, hexadecimal) digit c.
func digitVal(c byte, hex bool) (rune, bool) {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0'), true
	case !hex:
		return 0, false
	case 'a' <= c && c <= 'f':
		return rune(c-'a') + 10, true
	case 'A' <= c && c <= 'F':
		return rune(c-'A') + 10, true
	}
	return 0, false
}

// windows1252 maps the numeric references &#x80; to &#x9F; to the
// characters Windows-1252 has there, as the HTML standard (and
// x/net/html's replacementTable) does.
var windows1252 = [32]rune{
	'\u20AC', '\u0081', '\u201A', '\u0192', '\u201E', '\u2026', '\u2020', '\u2021',
	'\u02C6', '\u2030', '\u0160', '\u2039', '\u0152', '\u008D', '\u017D', '\u008F',
	'\u0090', '\u2018', '\u2019', '\u201C', '\u201D', '\u2022', '\u2013', '\u2014',
	'\u02DC', '\u2122', '\u0161', '\u203A', '\u0153', '\u009D', '\u017E', '\u0178',
}

// knownRef returns the expansion of the named character reference name
// (without '&', with its ';' if any) when it is one of the common ones that
// x/net/html's entity table has under exactly that name; TestKnownRefs holds
// every entry to x/net/html's own decoding, in text and in attributes.
func knownRef(name []byte) (string, bool) {
	switch string(name) {
	case "amp;", "amp", "AMP;", "AMP":
		return "&", true
	case "lt;", "lt", "LT;", "LT":
		return "<", true
	case "gt;", "gt", "GT;", "GT":
		return ">", true
	case "quot;", "quot", "QUOT;", "QUOT":
		return `"`, true
	case "apos;":
		return "'", true
	case "nbsp;", "nbsp":
		return "\u00a0", true
	case "shy;", "shy":
		return "\u00ad", true
	case "copy;", "copy", "COPY;", "COPY":
		return "\u00a9", true
	case "reg;", "reg", "REG;", "REG":
		return "\u00ae", true
	case "trade;":
		return "\u2122", true
	case "laquo;", "laquo":
		return "\u00ab", true
	case "raquo;", "raquo":
		return "\u00bb", true
	case "middot;", "middot":
		return "\u00b7", true
	case "times;", "times":
		return "\u00d7", true
	case "ndash;":
		return "\u2013", true
	case "mdash;":
		return "\u2014", true
	case "lsquo;":
		return "\u2018", true
	case "rsquo;":
		return "\u2019", true
	case "ldquo;":
		return "\u201c", true
	case "rdquo;":
		return "\u201d", true
	case "bull;":
		return "\u2022", true
	case "hellip;":
		return "\u2026", true
	case "euro;":
		return "\u20ac", true
	}
	return "", false
}

// appendRefSlow appends the expansion of the named reference ref ("&" and a
// name of ASCII letters and digits, perhaps ending in ';') that knownRef
// does not know, as x/net/html expands it. It allocates, but such
// references are rare.
//
// In text, html.UnescapeString gives the expansion: a name no entity has
// may match by a prefix, the rest of it following literally ("&ampx" is
// "&x"). In an attribute value (attr) only an exact name matches, which the
// text expansion t tells: a name without ';' matches exactly when t is one
// character (a prefix match leaves the rest of the name, no match leaves
// "&" and the name); a name with ';' matches exactly unless t ends in ';'
// (as the rest of a name, or the unmatched name, does), which no entity's
// expansion but "&semi;"'s does. TestAppendCharRefEntities checks this on
// every entity.
func appendRefSlow(dst, ref []byte, attr bool) []byte {
	t := html.UnescapeString(string(ref))
	if attr {
		exact := utf8.RuneCountInString(t) == 1
		if ref[len(ref)-1] == ';' {
			exact = t == ";" || !strings.HasSuffix(t, ";")
		}
		if !exact {
			return append(dst, ref...)
		}
	}
	return append(dst, t...)
}
