package parse

import (
	"bytes"
	"mime"
	"net/http"
	"strings"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

// MaxJSLiterals is the most requisites JS takes from one script; the
// string literals past it that look like requisites are counted in
// Result.EmbedsDropped.
const MaxJSLiterals = 100

// maxJSLiteral is the longest string literal JS looks at (longer ones are
// code or data, not a path).
const maxJSLiteral = 512

// jsRequisiteExts are the extensions (lower case, with the dot) that make
// a string literal look like the path of a static requisite.
var jsRequisiteExts = []string{
	".png", ".gif", ".jpg", ".jpeg", ".svg", ".webp", ".ico",
	".css", ".js", ".mjs", ".woff", ".woff2", ".ttf", ".otf",
}

// JS extracts, speculatively (as Heritrix's ExtractorJS does), the
// requisites a script fetched from base names in its string literals:
// '…', "…" and `…` without ${ substitutions (of a template with them, only
// a bare file name after the last one: templateTail), that hold no white space, no
// backslash, no scheme but http or https, and whose path ends in a
// requisite extension (jsRequisiteExts, in any case). They are resolved
// against base (the script's own URL) into Result.Embeds, at most
// MaxJSLiterals (and Options.MaxLinks) of them, the excess counted in
// EmbedsDropped. No code is run: a name the script builds at run time from
// pieces is not found. Comments are skipped; a regular expression literal
// may be read as code, which at worst loses or adds a candidate. Only
// Embeds, EmbedsDropped and BadEmbeds are set. JS never fails.
func JS(base urlx.URL, body []byte, opts Options) Result {
	var x extractor
	x.base, x.maxLinks, x.embeds = base, min(opts.MaxLinks, MaxJSLiterals), true
	if x.maxLinks <= 0 {
		x.maxLinks = MaxJSLiterals
	}
	x.scriptLiterals(body)
	x.res.Embeds, x.res.EmbedsDropped = x.reqs.urls, x.reqs.dropped
	return x.res
}

// scriptLiterals records the requisites the string literals of the
// script js name (see JS), at most MaxJSLiterals of them, the excess
// counted as dropped.
func (x *extractor) scriptLiterals(js []byte) {
	n := 0
	for lit, rest, ok := nextJSString(js); ok; lit, rest, ok = nextJSString(rest) {
		if tail, ok := templateTail(lit); ok {
			lit = tail
		}
		if !looksLikeRequisite(lit) {
			continue
		}
		if n >= MaxJSLiterals {
			x.reqs.dropped++
			continue
		}
		n++
		x.embed(lit)
	}
}

// isScriptType reports whether the type attribute t of a <script> makes
// it a script a browser runs: none or empty, a JavaScript MIME type, or
// module.
func isScriptType(t []byte) bool {
	s := strings.ToLower(strings.TrimSpace(string(t)))
	if i := strings.IndexByte(s, ';'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	switch s {
	case "", "module", "text/javascript", "application/javascript", "application/x-javascript",
		"text/ecmascript", "application/ecmascript", "text/jscript", "text/livescript":
		return true
	}
	return false
}

// nextJSString returns the contents of the next string literal of b
// (comments skipped) and the rest of b after it; ok is false at the end.
// A literal not closed (by its quote, or by a line end for ' and ") ends
// the scan of that literal only.
func nextJSString(b []byte) (lit, rest []byte, ok bool) {
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '/':
			if i+1 < len(b) && b[i+1] == '/' {
				j := bytes.IndexByte(b[i:], '\n')
				if j < 0 {
					return nil, nil, false
				}
				i += j
			} else if i+1 < len(b) && b[i+1] == '*' {
				j := bytes.Index(b[i+2:], []byte("*/"))
				if j < 0 {
					return nil, nil, false
				}
				i += j + 3
			}
		case '\'', '"', '`':
			end := jsStringEnd(b, i+1, c)
			if end < 0 {
				continue
			}
			return b[i+1 : end], b[end+1:], true
		}
	}
	return nil, nil, false
}

// jsStringEnd returns the index of the quote that closes the literal
// opened by quote before p, or -1 when a line end (for ' and ") or the end
// of b comes first.
func jsStringEnd(b []byte, p int, quote byte) int {
	for ; p < len(b); p++ {
		switch b[p] {
		case '\\':
			p++
		case quote:
			return p
		case '\n', '\r':
			if quote != '`' {
				return -1
			}
		}
	}
	return -1
}

// templateTail returns the text after the last substitution of a template
// literal's contents lit when that text is a bare file name (no '/'): a
// script that swaps an image for another of the same directory builds its
// name so (`${src.slice(0, -9)}plus.png`). ok is false when lit has no
// substitution or its tail holds a '/' (`${dir}/x.png`: the directory is
// unknown).
func templateTail(lit []byte) (tail []byte, ok bool) {
	i := bytes.Index(lit, []byte("${"))
	if i < 0 {
		return nil, false
	}
	j := bytes.LastIndexByte(lit, '}')
	if j < i || bytes.IndexByte(lit[j+1:], '/') >= 0 || bytes.Contains(lit[j+1:], []byte("${")) {
		return nil, false
	}
	return lit[j+1:], true
}

// looksLikeRequisite reports whether the contents of a string literal look
// like the URL of a static requisite (see JS).
func looksLikeRequisite(s []byte) bool {
	if len(s) < 5 || len(s) > maxJSLiteral || bytes.Contains(s, []byte("${")) {
		return false
	}
	for _, c := range s {
		if c <= ' ' || c == '\\' || c == '<' || c == '>' || c == '"' || c == '\'' || c == '`' || c == 0x7f {
			return false
		}
	}
	if i := bytes.IndexByte(s, ':'); i >= 0 && (bytes.IndexByte(s, '/') < 0 || i < bytes.IndexByte(s, '/')) {
		scheme := strings.ToLower(string(s[:i]))
		if scheme != "http" && scheme != "https" {
			return false
		}
	}
	path := s
	if i := bytes.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	for _, ext := range jsRequisiteExts {
		if len(path) > len(ext) && strings.EqualFold(string(path[len(path)-len(ext):]), ext) {
			return path[len(path)-len(ext)-1] != '/'
		}
	}
	return false
}

// IsJS reports whether a response is a script: its Content-Type is a
// JavaScript type, or, when it has none, its path ends in .js or .mjs.
func IsJS(header http.Header, path string) bool {
	ct := header.Get("Content-Type")
	if strings.TrimSpace(ct) == "" {
		if i := strings.IndexByte(path, '?'); i >= 0 {
			path = path[:i]
		}
		p := strings.ToLower(path)
		return strings.HasSuffix(p, ".js") || strings.HasSuffix(p, ".mjs")
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(strings.SplitN(ct, ";", 2)[0]))
	}
	switch mt {
	case "text/javascript", "application/javascript", "application/x-javascript",
		"text/ecmascript", "application/ecmascript", "module/javascript":
		return true
	}
	return false
}
