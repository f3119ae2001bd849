package parse

// Tokens walks a page with the scanner of the crawler's hot path, for
// packages that read the page's structure themselves (package extract). It
// splits the page exactly as golang.org/x/net/html's Tokenizer does (text,
// start tags and end tags; comments and doctypes are skipped) without
// allocating. The zero value is an empty page: call Reset.
type Tokens struct {
	s scanner
}

// TokenKind is the kind of token Tokens.Next returns.
type TokenKind uint8

// The kinds of tokens. EOF ends the page (a tag cut off by the end of the
// page ends it too).
const (
	EOF TokenKind = iota
	Text
	StartTag
	EndTag
)

// Reset readies t to walk page, which must be UTF-8 (see Decode) and is
// never written to.
func (t *Tokens) Reset(page []byte) { t.s.init(page) }

// Next scans the next token and returns its kind.
func (t *Tokens) Next() TokenKind {
	switch t.s.next() {
	case tokText:
		return Text
	case tokStartTag:
		return StartTag
	case tokEndTag:
		return EndTag
	}
	return EOF
}

// TagName returns the current tag's name, lower-cased; valid until Next.
func (t *Tokens) TagName() []byte { return t.s.tagName() }

// Attr returns the value of the current start tag's attribute key (given
// in lower case), decoded, and whether the tag has it. The value is valid
// until Next.
func (t *Tokens) Attr(key string) ([]byte, bool) { return t.s.attr(key) }

// Attrs returns, from one walk of the current start tag, what Attr
// returns of each of keys (given in lower case, distinct, at most
// MaxAttrKeys): AttrValues.Get(i) is the value of keys[i]. The values are
// valid until Next.
func (t *Tokens) Attrs(keys []string) AttrValues { return t.s.lookupAttrs(keys) }

// MaxAttrKeys is the most keys one walk of a tag (Tokens.Attrs) looks up.
const MaxAttrKeys = 8

// AttrValues are the values of the attributes of a start tag that one
// walk of it looked up (Tokens.Attrs), each as Tokens.Attr gives it.
// The values are valid until the scanner's next token.
type AttrValues struct {
	v   [MaxAttrKeys][]byte
	has uint8 // bit i: the tag has the i-th key
}

// Get returns the value of the i-th key looked up and whether the tag has
// that attribute.
func (a *AttrValues) Get(i int) ([]byte, bool) { return a.v[i], a.has&(1<<i) != 0 }

// SelfClosing reports whether the current start tag ends with "/>".
func (t *Tokens) SelfClosing() bool { return t.s.selfClosing() }

// AppendText appends the current text token's text, newlines normalised
// and character references decoded, to dst. Call it at most once a token.
func (t *Tokens) AppendText(dst []byte) []byte {
	for p, ok := t.s.textPiece(); ok; p, ok = t.s.textPiece() {
		dst = append(dst, p...)
	}
	return dst
}

// Decode returns body converted to UTF-8 and the name of its encoding,
// determined as HTML does it (byte order mark, the charset of contentType,
// a <meta> declaration in the first 1024 bytes, else utf-8 when body is
// valid UTF-8 and windows-1252 otherwise). The result may share body.
func Decode(contentType string, body []byte) ([]byte, string) {
	return decode(contentType, body)
}
