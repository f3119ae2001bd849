package filter

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Expr is a parsed filter: a tree of predicates joined by and, or and not.
// It is immutable and safe for concurrent use.
type Expr struct {
	src  string
	root node
	// needs is the union of what the predicates read: a filter that reads
	// the response cannot run before the fetch.
	needs needs
}

// needs says what of a Subject a predicate reads.
type needs uint8

const (
	needsResponse  needs = 1 << iota // status, content type
	needsDuplicate                   // whether the payload duplicates one stored
	needsLanguage                    // the page's languages
)

// node is one vertex of the predicate tree.
type node interface {
	eval(s *Subject) bool
	String() string
}

type andNode []node
type orNode []node
type notNode struct{ n node }
type constNode bool

func (a andNode) eval(s *Subject) bool {
	for _, n := range a {
		if !n.eval(s) {
			return false
		}
	}
	return true
}

func (o orNode) eval(s *Subject) bool {
	for _, n := range o {
		if n.eval(s) {
			return true
		}
	}
	return false
}

func (n notNode) eval(s *Subject) bool { return !n.n.eval(s) }
func (c constNode) eval(*Subject) bool { return bool(c) }
func (a andNode) String() string       { return join(a, " and ") }
func (o orNode) String() string        { return join(o, " or ") }
func (c constNode) String() string     { return fmt.Sprint(bool(c)) }
func (n notNode) String() string {
	switch n.n.(type) {
	case andNode, orNode:
		return "not (" + n.n.String() + ")"
	}
	return "not " + n.n.String()
}

func join(ns []node, op string) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = n.String()
		if _, ok := n.(orNode); ok && op == " and " {
			parts[i] = "(" + parts[i] + ")"
		}
		if _, ok := n.(andNode); ok && op == " or " {
			parts[i] = "(" + parts[i] + ")"
		}
	}
	return strings.Join(parts, op)
}

// Accept evaluates the filter on s. A nil *Expr accepts everything.
func (e *Expr) Accept(s *Subject) bool {
	if e == nil {
		return true
	}
	return e.root.eval(s)
}

// NeedsLanguage reports whether the filter reads a page's languages
// (Subject.Languages), which the caller then detects.
func (e *Expr) NeedsLanguage() bool { return e != nil && e.needs&needsLanguage != 0 }

// String returns the filter as written.
func (e *Expr) String() string {
	if e == nil {
		return "true"
	}
	return e.src
}

// Canonical returns the filter as the parser understood it: predicates
// with their arguments, operators in words, parentheses where needed.
func (e *Expr) Canonical() string {
	if e == nil {
		return "true"
	}
	return e.root.String()
}

// SyntaxError is a filter that does not parse, or a predicate used where
// it cannot be decided. Column counts characters from 1.
type SyntaxError struct {
	Column int
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("column %d: %s", e.Column, e.Msg) }

// Parse parses a filter: predicates (Name, or Name(arguments)) and the
// constants true and false, combined with and (&), or (|), not (!) and
// parentheses; and binds tighter than or. The empty filter is true.
func Parse(src string) (*Expr, error) {
	p := &parser{src: src}
	p.next()
	if p.tok.kind == tokEOF {
		return &Expr{src: src, root: constNode(true)}, nil
	}
	root, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEOF {
		return nil, p.errf(p.tok.col, "unexpected %s", p.tok)
	}
	return &Expr{src: src, root: root, needs: p.needs}, nil
}

// MustParse is Parse for filters known to be valid; it panics otherwise.
func MustParse(src string) *Expr {
	e, err := Parse(src)
	if err != nil {
		panic(fmt.Sprintf("filter.MustParse(%q): %v", src, err))
	}
	return e
}

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokName
	tokAnd
	tokOr
	tokNot
	tokOpen
	tokClose
	tokArgs // the raw text between a predicate's parentheses
	tokBad
)

type token struct {
	kind tokKind
	text string
	col  int // column of its first character, from 1
}

func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "end of filter"
	case tokOpen:
		return `"("`
	case tokClose:
		return `")"`
	}
	return fmt.Sprintf("%q", t.text)
}

type parser struct {
	src   string
	pos   int // byte offset of the next character
	tok   token
	needs needs
}

// col returns the column of byte offset off.
func (p *parser) col(off int) int { return utf8.RuneCountInString(p.src[:off]) + 1 }

func (p *parser) errf(col int, format string, a ...any) error {
	return &SyntaxError{Column: col, Msg: fmt.Sprintf(format, a...)}
}

func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '$'
}

// next reads the next token into p.tok.
func (p *parser) next() {
	for p.pos < len(p.src) && strings.IndexByte(" \t\r\n", p.src[p.pos]) >= 0 {
		p.pos++
	}
	start := p.pos
	col := p.col(start)
	if p.pos >= len(p.src) {
		p.tok = token{kind: tokEOF, col: col}
		return
	}
	c := p.src[p.pos]
	one := func(k tokKind) {
		p.pos++
		p.tok = token{kind: k, text: p.src[start:p.pos], col: col}
	}
	switch c {
	case '&':
		one(tokAnd)
	case '|':
		one(tokOr)
	case '!':
		one(tokNot)
	case '(':
		one(tokOpen)
	case ')':
		one(tokClose)
	default:
		if !isNameByte(c) {
			_, n := utf8.DecodeRuneInString(p.src[p.pos:])
			p.pos += n
			p.tok = token{kind: tokBad, text: p.src[start:p.pos], col: col}
			return
		}
		for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
			p.pos++
		}
		text := p.src[start:p.pos]
		kind := tokName
		switch text {
		case "and":
			kind = tokAnd
		case "or":
			kind = tokOr
		case "not":
			kind = tokNot
		}
		p.tok = token{kind: kind, text: text, col: col}
	}
}

// or := and (("or" | "|") and)*
func (p *parser) or() (node, error) {
	return p.chain(tokOr, p.and, func(ns []node) node { return orNode(ns) })
}

// and := unary (("and" | "&") unary)*
func (p *parser) and() (node, error) {
	return p.chain(tokAnd, p.unary, func(ns []node) node { return andNode(ns) })
}

// chain parses operands joined by the operator op, making one node of
// two or more with join.
func (p *parser) chain(op tokKind, operand func() (node, error), join func([]node) node) (node, error) {
	first, err := operand()
	if err != nil {
		return nil, err
	}
	ns := []node{first}
	for p.tok.kind == op {
		p.next()
		n, err := operand()
		if err != nil {
			return nil, err
		}
		ns = append(ns, n)
	}
	if len(ns) == 1 {
		return first, nil
	}
	return join(ns), nil
}

// unary := ("not" | "!") unary | "(" or ")" | term
func (p *parser) unary() (node, error) {
	switch p.tok.kind {
	case tokNot:
		p.next()
		n, err := p.unary()
		if err != nil {
			return nil, err
		}
		return notNode{n}, nil
	case tokOpen:
		open := p.tok.col
		p.next()
		n, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tokClose {
			return nil, p.errf(p.tok.col, "want \")\" closing the \"(\" of column %d, found %s", open, p.tok)
		}
		p.next()
		return n, nil
	case tokName:
		return p.term()
	case tokEOF:
		return nil, p.errf(p.tok.col, "filter ends where a predicate is expected")
	}
	return nil, p.errf(p.tok.col, "want a predicate, \"not\" or \"(\", found %s", p.tok)
}

// term := "true" | "false" | Name | Name "(" arguments ")"
func (p *parser) term() (node, error) {
	name, col := p.tok.text, p.tok.col
	switch name {
	case "true", "TRUE":
		p.next()
		return constNode(true), nil
	case "false", "FALSE":
		p.next()
		return constNode(false), nil
	}
	def, ok := predicates[name]
	if !ok {
		return nil, p.errf(col, "unknown predicate %q%s", name, suggest(name))
	}
	var args []string
	hasArgs := p.pos < len(p.src) && p.src[p.pos] == '('
	if hasArgs {
		raw, err := p.args(name == "SURTPrefix")
		if err != nil {
			return nil, err
		}
		if args, err = splitArgs(raw, def.list); err != nil {
			return nil, p.errf(col, "%s: %v", name, err)
		}
	}
	p.next()
	switch {
	case def.arity == 0 && hasArgs && len(args) > 0:
		return nil, p.errf(col, "%s takes no argument", name)
	case def.arity > 0 && len(args) == 0:
		return nil, p.errf(col, "%s needs %s, as in %s", name, def.argHelp, def.example)
	case def.arity == 1 && len(args) > 1:
		return nil, p.errf(col, "%s takes one argument, not %d", name, len(args))
	}
	n, err := def.make(args)
	if err != nil {
		return nil, p.errf(col, "%s: %v", name, err)
	}
	p.needs |= def.needs
	return n, nil
}

// args reads a predicate's parenthesised arguments from p.pos (at its
// "("), returning the text inside. Parentheses nest; a double-quoted
// string may hold anything, with \" and \\ escaped. In a SURT (surt) the
// "(" that opens the host (first, or after "://") need not be closed, as
// in SURTPrefix(http://(org,example,): its ")" is the host's only when a
// "/" follows it.
func (p *parser) args(surt bool) (string, error) {
	openCol := p.col(p.pos)
	start := p.pos + 1
	depth := 0
	host := false // inside a SURT's host
	for i := start; i < len(p.src); i++ {
		switch c := p.src[i]; c {
		case '"':
			j, err := skipQuoted(p.src, i)
			if err != nil {
				return "", p.errf(p.col(i), "%v", err)
			}
			i = j
		case '(':
			if surt && !host && (i == start || strings.HasSuffix(p.src[start:i], "://")) {
				host = true
				continue
			}
			depth++
		case ')':
			switch {
			case depth > 0:
				depth--
			case host && i+1 < len(p.src) && p.src[i+1] == '/':
				host = false
			default:
				p.pos = i + 1
				return p.src[start:i], nil
			}
		}
	}
	return "", p.errf(openCol, "the \"(\" of the arguments is never closed")
}

// skipQuoted returns the offset of the closing quote of the string that
// starts at s[i].
func skipQuoted(s string, i int) (int, error) {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j, nil
		}
	}
	return 0, fmt.Errorf("the quoted string is never closed")
}

// splitArgs splits raw arguments at the commas outside quotes (list) or
// takes them whole, trims them and removes their quotes.
func splitArgs(raw string, list bool) ([]string, error) {
	var parts []string
	if list {
		start := 0
		for i := 0; i < len(raw); i++ {
			switch raw[i] {
			case '"':
				j, err := skipQuoted(raw, i)
				if err != nil {
					return nil, err
				}
				i = j
			case ',':
				parts = append(parts, raw[start:i])
				start = i + 1
			}
		}
		parts = append(parts, raw[start:])
	} else {
		parts = []string{raw}
	}
	out := parts[:0]
	for _, a := range parts {
		a = strings.TrimSpace(a)
		if len(a) >= 2 && a[0] == '"' && a[len(a)-1] == '"' {
			out = append(out, unquote(a[1:len(a)-1]))
		} else if a != "" {
			out = append(out, a)
		}
	}
	if len(out) == 0 && strings.TrimSpace(raw) != "" {
		return nil, fmt.Errorf("empty argument")
	}
	return out, nil
}

func unquote(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// suggest names the predicate closest to an unknown name.
func suggest(name string) string {
	best, bestD := "", 4
	for p := range predicates {
		if d := editDistance(strings.ToLower(name), strings.ToLower(p)); d < bestD {
			best, bestD = p, d
		}
	}
	if best == "" {
		return " (see the predicates in internal/filter/doc.go)"
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
