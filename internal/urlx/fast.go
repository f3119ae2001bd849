package urlx

import (
	"strings"

	"github.com/petrel-crawler/petrel/internal/ascii"
)

// The fast path handles the common shapes of links (plain ASCII absolute
// http(s) URLs with simple host names, scheme-relative, absolute-path,
// relative-path and query-only references) without the WHATWG parser and with
// a single allocation. It declines (ok == false) anything it is not sure to
// handle exactly as the WHATWG parser followed by Petrel's normalisation
// would; the caller then takes the slow path. The fuzz test checks that both
// paths agree.

// fastSafe marks the bytes the fast path accepts in a reference: ASCII
// letters and digits and the URL punctuation that the WHATWG parser never
// percent-encodes in paths and special queries. The fragment, after '#', is
// not checked (it is dropped).
var fastSafe = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "-._~!$&()*+,;=:@/?%" {
		t[c] = true
	}
	return t
}()

// fastParse parses ref against base (nil for absolute-only parsing).
func fastParse(base *URL, ref string) (u URL, ok bool) {
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		if !fastSafe[c] {
			if c != '#' {
				return URL{}, false
			}
			ref = ref[:i]
			break
		}
	}
	var scheme, rest string
	switch {
	case hasPrefixFold(ref, "http://"):
		scheme, rest = "http", ref[len("http://"):]
	case hasPrefixFold(ref, "https://"):
		scheme, rest = "https", ref[len("https://"):]
	case base == nil:
		return URL{}, false
	case strings.HasPrefix(ref, "//"):
		scheme, rest = base.Scheme, ref[2:]
	default:
		return fastRelative(base, ref)
	}
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	host, port := rest[:end], ""
	if i := strings.IndexByte(host, ':'); i >= 0 {
		host, port = host[:i], host[i+1:]
	}
	if !fastHost(host) {
		return URL{}, false
	}
	port, ok = fastPort(scheme, port)
	if !ok {
		return URL{}, false
	}
	var arr [256]byte
	buf := appendLower(arr[:0], host)
	if port != "" {
		buf = append(buf, ':')
		buf = append(buf, port...)
	}
	pqStart := len(buf)
	path, query, hasQuery := cutQuery(rest[end:])
	if path == "" {
		buf = append(buf, '/')
	} else {
		buf = appendSegments(buf, pqStart, path[1:])
	}
	if hasQuery && query != "" {
		buf = append(buf, '?')
		buf = appendEscapes(buf, query)
	}
	return assemble(scheme, buf, len(host), pqStart), true
}

// fastRelative resolves a reference without scheme or authority.
func fastRelative(base *URL, ref string) (URL, bool) {
	if ref == "" {
		return *base, true
	}
	if ref[0] != '/' && ref[0] != '?' {
		// A ':' before the first '/' or '?' may start a scheme.
		if i := strings.IndexAny(ref, ":/?"); i >= 0 && ref[i] == ':' {
			return URL{}, false
		}
	}
	var arr [256]byte
	buf := arr[:0]
	path, query, hasQuery := cutQuery(ref)
	basePath := base.Path()
	switch {
	case ref[0] == '/':
		buf = appendSegments(buf, 0, path[1:])
	case path == "": // "?query" only
		buf = append(buf, basePath...)
	default:
		// Merge: the base path without its last segment, then ref's segments.
		dir := basePath[:strings.LastIndexByte(basePath, '/')]
		buf = append(buf, dir...)
		buf = appendSegments(buf, 0, path)
	}
	if hasQuery && query != "" {
		buf = append(buf, '?')
		buf = appendEscapes(buf, query)
	}
	return URL{Scheme: base.Scheme, Host: base.Host, Port: base.Port, PathQuery: string(buf)}, true
}

// cutQuery splits s at its first '?'.
func cutQuery(s string) (path, query string, hasQuery bool) {
	if i := strings.IndexByte(s, '?'); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

// fastHost reports whether host is a plain ASCII domain name the fast path
// can lower-case without IDNA processing: non-empty labels of letters, digits
// and '-', at most 63 bytes, and a last label that does not start with a
// digit (such hosts may be IPv4 addresses in the WHATWG sense) unless the
// whole host is a canonical dotted-quad. "xn--" labels are lower-cased like
// any other: the URL Standard does not check the Punycode of an all-ASCII
// domain (see asciiDomain).
func fastHost(host string) bool {
	if host == "" {
		return false
	}
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false // trailing dot or empty label
	}
	if last[0] >= '0' && last[0] <= '9' {
		return canonicalIPv4(host)
	}
	label := 0
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch {
		case c == '.':
			if label == 0 {
				return false
			}
			label = 0
			continue
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-':
		default:
			return false
		}
		label++
		if label > 63 {
			return false
		}
	}
	return label > 0
}

// canonicalIPv4 reports whether s is four decimal octets 0-255 without
// leading zeros, which the WHATWG host parser leaves unchanged.
func canonicalIPv4(s string) bool {
	parts := 0
	for {
		n, v := 0, 0
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			v = v*10 + int(s[n]-'0')
			n++
			if n > 3 {
				return false
			}
		}
		if n == 0 || v > 255 || (n > 1 && s[0] == '0') {
			return false
		}
		parts++
		s = s[n:]
		if s == "" {
			return parts == 4
		}
		if s[0] != '.' || parts == 4 {
			return false
		}
		s = s[1:]
	}
}

// fastPort validates a decimal port and returns it without leading zeros,
// or "" when empty or the scheme's default.
func fastPort(scheme, p string) (string, bool) {
	for len(p) > 1 && p[0] == '0' {
		p = p[1:]
	}
	if len(p) > 5 {
		return "", false
	}
	v := 0
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c < '0' || c > '9' {
			return "", false
		}
		v = v*10 + int(c-'0')
	}
	if v > 65535 {
		return "", false
	}
	if p == DefaultPort(scheme) {
		return "", true
	}
	return p, true
}

// appendSegments appends to buf the path segments of p (a path without its
// leading '/') onto the segments already in buf[start:], each written as
// "/segment", removing dot-segments as the WHATWG path state does (".", "..",
// and their %2e spellings) and normalising percent-escapes. It ensures the
// path is at least "/".
func appendSegments(buf []byte, start int, p string) []byte {
	for {
		seg, rest, more := strings.Cut(p, "/")
		switch dotSegment(seg) {
		case 2:
			if i := lastSlash(buf, start); i >= 0 {
				buf = buf[:i]
			}
			if !more {
				buf = append(buf, '/')
			}
		case 1:
			if !more {
				buf = append(buf, '/')
			}
		default:
			buf = append(buf, '/')
			buf = appendEscapes(buf, seg)
		}
		if !more {
			break
		}
		p = rest
	}
	if len(buf) == start {
		buf = append(buf, '/')
	}
	return buf
}

func lastSlash(buf []byte, start int) int {
	for i := len(buf) - 1; i >= start; i-- {
		if buf[i] == '/' {
			return i
		}
	}
	return -1
}

// dotSegment returns 1 for a single-dot segment, 2 for a double-dot segment,
// 0 otherwise.
func dotSegment(s string) int {
	switch len(s) {
	case 1:
		if s == "." {
			return 1
		}
	case 2:
		if s == ".." {
			return 2
		}
	case 3:
		if ascii.EqualFold(s, "%2e") {
			return 1
		}
	case 4:
		if ascii.EqualFold(s, ".%2e") || ascii.EqualFold(s, "%2e.") {
			return 2
		}
	case 6:
		if ascii.EqualFold(s, "%2e%2e") {
			return 2
		}
	}
	return 0
}

func hasPrefixFold(s, lowerPrefix string) bool {
	return len(s) >= len(lowerPrefix) && ascii.EqualFold(s[:len(lowerPrefix)], lowerPrefix)
}

func appendLower(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// appendEscapes appends s to dst normalising percent-escapes: an escape of
// an unreserved character (ALPHA, DIGIT, '-', '.', '_', '~') is decoded, the
// hex digits of other escapes are upper-cased, and a '%' that does not start
// a valid escape is itself escaped as "%25".
func appendEscapes(dst []byte, s string) []byte {
	for {
		i := strings.IndexByte(s, '%')
		if i < 0 {
			return append(dst, s...)
		}
		dst = append(dst, s[:i]...)
		s = s[i:]
		if len(s) < 3 || !isHex(s[1]) || !isHex(s[2]) {
			dst = append(dst, "%25"...)
			s = s[1:]
			continue
		}
		if c := unhex(s[1])<<4 | unhex(s[2]); unreserved(c) {
			dst = append(dst, c)
		} else {
			dst = append(dst, '%', upperHex(s[1]), upperHex(s[2]))
		}
		s = s[3:]
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

func upperHex(c byte) byte {
	if c >= 'a' {
		return c - ('a' - 'A')
	}
	return c
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}
