package parse

// CSS scanner: the URLs a style sheet makes a browser fetch.
//
// cssScanner walks a style sheet (a CSS file, the text of a <style> element
// or a style attribute) as CSS Syntax Level 3's tokenizer does, far enough
// to find every url() token, every url() function with a string argument,
// and the string or url of each @import rule. Comments and strings are
// skipped whole, identifiers, numbers and hashes are consumed whole, so
// "/* url(x) */", "content: 'url(x)'", "xurl(x)" and "1url(x)" hold no URL.
//
// Invariants:
//   - The input is never written to; it is read as the tokenizer's
//     preprocessed stream would be: "\r\n", "\r" and "\f" are newlines and a
//     NUL is U+FFFD. So the same URLs come from a text before and after the
//     HTML tokenizer's own newline and NUL conversion (FuzzCSS checks this).
//   - pos only moves forward, by at least one byte per step: the scan is
//     linear in the input.
//   - A URL is returned as the input's own bytes when it holds no escape
//     or NUL, otherwise decoded (valid until the next call).
//   - A bad url token (white space inside, a quote, '(' or a control) and a
//     bad string (a newline inside) hold no URL; an unterminated string or
//     url at the end of the input still does, as the tokenizer says.

import "unicode/utf8"

// cssScanner is the state of one pass over a style sheet: make it as
// cssScanner{b: sheet}.
type cssScanner struct {
	b        []byte
	pos      int
	inImport bool // an @import at-keyword was the last token (white space aside)
	// arr holds a decoded value, when short (longer ones are allocated);
	// slices of it are only returned, never stored, which keeps a
	// scanner on its caller's stack.
	arr [256]byte
}

// next returns the next URL of the style sheet, and false at its end.
func (c *cssScanner) next() ([]byte, bool) {
	b := c.b
	for c.pos < len(b) {
		p := c.pos
		ch := b[p]
		imp := c.inImport
		c.inImport = false
		switch {
		case isCSSSpace(ch):
			c.pos++
			c.inImport = imp // white space between @import and its URL
		case ch == '/' && p+1 < len(b) && b[p+1] == '*':
			c.pos = cssCommentEnd(b, p+2)
			c.inImport = imp
		case ch == '"' || ch == '\'':
			v, ok := c.string(p+1, ch)
			if ok && imp {
				return v, true
			}
		case ch == '@':
			if startsIdent(b, p+1) {
				q := c.nameEnd(p + 1)
				c.inImport = c.nameIs(p+1, q, "import")
				c.pos = q
			} else {
				c.pos++
			}
		case ch == '#':
			c.pos++
			if p+1 < len(b) && (isNameByte(b[p+1]) || validEscape(b, p+1)) {
				c.pos = c.nameEnd(p + 1)
			}
		case startsNumber(b, p):
			c.pos = c.numberEnd(p)
		case startsIdent(b, p):
			if v, ok := c.identLike(p); ok {
				return v, true
			}
		default:
			c.pos++
		}
	}
	return nil, false
}

// identLike consumes the identifier-like token at p: an identifier, a
// function, or a url. It returns the URL of "url(" followed by a string
// (a function token) or by an unquoted URL (a url token).
func (c *cssScanner) identLike(p int) ([]byte, bool) {
	b := c.b
	q := c.nameEnd(p)
	c.pos = q
	if q == len(b) || b[q] != '(' || !c.nameIs(p, q, "url") {
		if q < len(b) && b[q] == '(' {
			c.pos++ // a function; its arguments are tokens of their own
		}
		return nil, false
	}
	q++
	for q < len(b) && isCSSSpace(b[q]) {
		q++
	}
	if q < len(b) && (b[q] == '"' || b[q] == '\'') {
		return c.string(q+1, b[q])
	}
	return c.unquotedURL(q)
}

// string consumes the string whose opening quote is just before p and
// returns its value; ok is false for a bad string (a newline inside).
// Mirrors "consume a string token".
func (c *cssScanner) string(p int, quote byte) ([]byte, bool) {
	b := c.b
	start, plain := p, true
	for ; p < len(b); p++ {
		switch ch := b[p]; {
		case ch == quote:
			c.pos = p + 1
			return c.value(start, p, plain), true
		case ch == '\n' || ch == '\r' || ch == '\f':
			c.pos = p // the newline is not consumed
			return nil, false
		case ch == '\\' || ch == 0:
			plain = false
			if ch == '\\' && p+1 < len(b) {
				if n := newlineLen(b, p+1); n > 0 {
					p += n // a continuation
				} else {
					p = escapeEnd(b, p+1) - 1
				}
			}
		}
	}
	c.pos = len(b)
	return c.value(start, len(b), plain), true
}

// unquotedURL consumes the rest of a url token whose value starts at p
// (white space after "url(" skipped). Mirrors "consume a url token".
func (c *cssScanner) unquotedURL(p int) ([]byte, bool) {
	b := c.b
	start, plain := p, true
	for ; p < len(b); p++ {
		switch ch := b[p]; {
		case ch == ')':
			c.pos = p + 1
			return c.value(start, p, plain), true
		case isCSSSpace(ch):
			end := p
			for p < len(b) && isCSSSpace(b[p]) {
				p++
			}
			if p == len(b) || b[p] == ')' {
				c.pos = min(p+1, len(b))
				return c.value(start, end, plain), true
			}
			c.badURL(p)
			return nil, false
		case ch == '"' || ch == '\'' || ch == '(' || nonPrintable(ch):
			c.badURL(p)
			return nil, false
		case ch == '\\':
			if !validEscape(b, p) {
				c.badURL(p)
				return nil, false
			}
			plain = false
			p = escapeEnd(b, p+1) - 1
		case ch == 0:
			plain = false
		}
	}
	c.pos = len(b)
	return c.value(start, len(b), plain), true
}

// badURL consumes the remnants of a bad url from p: up to and including
// the next ')' that is not escaped, or the end.
func (c *cssScanner) badURL(p int) {
	b := c.b
	for ; p < len(b); p++ {
		switch {
		case b[p] == ')':
			c.pos = p + 1
			return
		case validEscape(b, p):
			p = escapeEnd(b, p+1) - 1
		}
	}
	c.pos = len(b)
}

// value returns the decoded text of b[start:end], a string's or url's
// value: as is when plain, else with escapes decoded and NUL replaced, in
// c.arr. An escaped newline in a string is a continuation and gives nothing.
func (c *cssScanner) value(start, end int, plain bool) []byte {
	b := c.b
	if plain {
		return b[start:end]
	}
	out := c.arr[:0]
	for p := start; p < end; {
		switch ch := b[p]; ch {
		case 0:
			out = append(out, "\ufffd"...)
			p++
		case '\\':
			if p+1 == end {
				return out // a backslash at the end of the input gives nothing
			}
			if n := newlineLen(b, p+1); n > 0 {
				p += 1 + n
				continue
			}
			var q int
			out, q = appendEscape(out, b, p+1)
			p = q
		default:
			out = append(out, ch)
			p++
		}
	}
	return out
}

// nameEnd returns the end of the name (identifier code points and escapes)
// starting at p. Mirrors "consume an ident sequence".
func (c *cssScanner) nameEnd(p int) int {
	b := c.b
	for p < len(b) {
		switch {
		case isNameByte(b[p]):
			p++
		case validEscape(b, p):
			p = escapeEnd(b, p+1)
		default:
			return p
		}
	}
	return p
}

// nameIs reports whether the name b[p:q] is lower (lower-case ASCII) in any
// ASCII case, escapes decoded.
func (c *cssScanner) nameIs(p, q int, lower string) bool {
	b := c.b
	i := 0
	for p < q {
		var r byte
		if b[p] == '\\' {
			var one [utfMax]byte
			dec, next := appendEscape(one[:0], b, p+1)
			if len(dec) != 1 {
				return false
			}
			r, p = dec[0], next
		} else {
			r, p = b[p], p+1
		}
		if i == len(lower) || r|0x20 != lower[i] || !isLetter(r) {
			return false
		}
		i++
	}
	return i == len(lower)
}

const utfMax = 4

// numberEnd returns the end of the numeric token at p (startsNumber): the
// number, then its unit (an identifier) or '%'. Mirrors "consume a numeric
// token".
func (c *cssScanner) numberEnd(p int) int {
	b := c.b
	if b[p] == '+' || b[p] == '-' {
		p++
	}
	p = digitsEnd(b, p)
	if p+1 < len(b) && b[p] == '.' && isDigit(b[p+1]) {
		p = digitsEnd(b, p+1)
	}
	if p+1 < len(b) && (b[p] == 'e' || b[p] == 'E') {
		q := p + 1
		if q < len(b) && (b[q] == '+' || b[q] == '-') {
			q++
		}
		if q < len(b) && isDigit(b[q]) {
			p = digitsEnd(b, q)
		}
	}
	switch {
	case startsIdent(b, p):
		return c.nameEnd(p)
	case p < len(b) && b[p] == '%':
		return p + 1
	}
	return p
}

func digitsEnd(b []byte, p int) int {
	for p < len(b) && isDigit(b[p]) {
		p++
	}
	return p
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isCSSSpace reports whether c is CSS white space (newlines as the
// preprocessed stream has them: '\r' and '\f' too).
func isCSSSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}

// isNameStart reports whether c starts an identifier code point: a letter,
// '_', a non-ASCII byte, or NUL (U+FFFD once preprocessed).
func isNameStart(c byte) bool {
	return isLetter(c) || c == '_' || c >= 0x80 || c == 0
}

func isNameByte(c byte) bool { return isNameStart(c) || isDigit(c) || c == '-' }

// nonPrintable reports whether c is a non-printable code point of CSS
// (NUL is U+FFFD once preprocessed, so it is not one).
func nonPrintable(c byte) bool {
	return c >= 1 && c <= 8 || c == 0x0b || c >= 0x0e && c <= 0x1f || c == 0x7f
}

// newlineLen returns the length of the newline at b[p] ("\r\n" is one), or 0.
func newlineLen(b []byte, p int) int {
	switch {
	case p >= len(b):
		return 0
	case b[p] == '\r' && p+1 < len(b) && b[p+1] == '\n':
		return 2
	case b[p] == '\n' || b[p] == '\r' || b[p] == '\f':
		return 1
	}
	return 0
}

// validEscape reports whether b[p] is a backslash starting a valid escape:
// one not followed by a newline (or the end, which the tokenizer's check
// of two code points treats the same way: EOF is not a newline, but only
// strings and url values consume it, and they handle it themselves).
func validEscape(b []byte, p int) bool {
	return p < len(b) && b[p] == '\\' && p+1 < len(b) && newlineLen(b, p+1) == 0
}

// startsIdent reports whether an identifier starts at p ("check if three
// code points would start an ident sequence").
func startsIdent(b []byte, p int) bool {
	if p >= len(b) {
		return false
	}
	switch ch := b[p]; {
	case ch == '-':
		return p+1 < len(b) && (isNameStart(b[p+1]) || b[p+1] == '-' || validEscape(b, p+1))
	case isNameStart(ch):
		return true
	case ch == '\\':
		return validEscape(b, p)
	}
	return false
}

// startsNumber reports whether a number starts at p ("check if three code
// points would start a number").
func startsNumber(b []byte, p int) bool {
	digitAt := func(i int) bool { return i < len(b) && isDigit(b[i]) }
	switch ch := b[p]; {
	case ch == '+' || ch == '-':
		return digitAt(p+1) || p+1 < len(b) && b[p+1] == '.' && digitAt(p+2)
	case ch == '.':
		return digitAt(p + 1)
	}
	return isDigit(b[p])
}

// escapeEnd returns the end of the escape whose backslash is just before p
// (p < len(b)): up to six hex digits and one white space after them
// ("\r\n" counts as one), or one whole UTF-8 character.
func escapeEnd(b []byte, p int) int {
	if !isHex(b[p]) {
		if b[p] < 0x80 {
			return p + 1
		}
		_, n := utf8.DecodeRune(b[p:])
		return p + n
	}
	q := p
	for q < len(b) && q-p < 6 && isHex(b[q]) {
		q++
	}
	if n := newlineLen(b, q); n > 0 {
		return q + n
	}
	if q < len(b) && (b[q] == ' ' || b[q] == '\t') {
		q++
	}
	return q
}

// appendEscape appends the code point of the escape whose backslash is
// just before p (p < len(b)) and returns the end of the escape. Mirrors
// "consume an escaped code point": zero, a surrogate or a value above
// U+10FFFF is U+FFFD, and so is an escaped NUL.
func appendEscape(dst, b []byte, p int) ([]byte, int) {
	end := escapeEnd(b, p)
	if !isHex(b[p]) {
		if b[p] == 0 {
			return append(dst, "\ufffd"...), end
		}
		return append(dst, b[p:end]...), end
	}
	var r rune
	for q := p; q < end && isHex(b[q]); q++ {
		r = r<<4 | rune(unhexByte(b[q]))
	}
	if r == 0 || 0xd800 <= r && r <= 0xdfff || r > 0x10ffff {
		r = 0xfffd
	}
	return utf8.AppendRune(dst, r), end
}

func isHex(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhexByte(c byte) byte {
	switch {
	case isDigit(c):
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// cssCommentEnd returns the position past the "*/" closing the comment
// whose "/*" ends just before p, or len(b).
func cssCommentEnd(b []byte, p int) int {
	for ; p+1 < len(b); p++ {
		if b[p] == '*' && b[p+1] == '/' {
			return p + 2
		}
	}
	return len(b)
}
