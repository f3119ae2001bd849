package urlx

import "strings"

// The URL Standard's "domain to ASCII" lower-cases a domain that is all
// ASCII and returns it without running UTS #46 on it, so its "xn--" labels
// are not decoded and their Punycode is not checked
// (http://a.b.c.xn--pokxncvks/ and https://xn--/ are valid URLs; a domain
// with a non-ASCII character still has every label checked, so xn--a.ß is
// not). whatwg-url v0.6.2 predates that rule and refuses such domains.
// asciiDomain applies it: it puts a placeholder in the place of the
// reference's host, parses that with the WHATWG parser, and puts the host,
// lower-cased, back.

// placeholderHost stands for the host while asciiDomain parses.
const placeholderHost = "petrel-placeholder.invalid"

// asciiDomain parses ref (against base, when not nil) when its authority's
// host is an ASCII domain with an "xn--" label that the WHATWG parser
// refused, and reports whether it did.
func asciiDomain(base *URL, ref string) (URL, bool) {
	s := strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1 // the URL parser removes tabs and newlines anywhere
		}
		return r
	}, strings.TrimFunc(ref, func(r rune) bool { return r <= ' ' }))
	start := authorityStart(base, s)
	if start < 0 {
		return URL{}, false
	}
	end := start + strings.IndexAny(s[start:]+"/", "/\\?#")
	auth := s[start:end]
	hostStart := start + strings.LastIndexByte(auth, '@') + 1
	host := s[hostStart:end]
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	if !isASCIIDomain(host) {
		return URL{}, false
	}
	u, err := slowParse(base, s[:hostStart]+placeholderHost+s[hostStart+len(host):])
	if err != nil || u.Host != placeholderHost {
		return URL{}, false
	}
	u.Host = toLowerASCII(host)
	if u.stringLen() > MaxLength {
		return URL{}, false
	}
	return assembleURL(u), true
}

// assembleURL returns u with its strings in one allocation, as the
// parsers give them.
func assembleURL(u URL) URL {
	buf := make([]byte, 0, len(u.Host)+1+len(u.Port)+len(u.PathQuery))
	buf = append(buf, u.Host...)
	if u.Port != "" {
		buf = append(append(buf, ':'), u.Port...)
	}
	pq := len(buf)
	return assemble(u.Scheme, append(buf, u.PathQuery...), len(u.Host), pq)
}

// authorityStart returns where the authority of s starts when s names one:
// after "http:" or "https:" and one or more slashes (or backslashes), or,
// against a base, after two leading slashes; else -1.
func authorityStart(base *URL, s string) int {
	i := 0
	if scheme, ok := leadingScheme(s); ok {
		if !strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https") {
			return -1
		}
		i = len(scheme) + 1
		if i == len(s) || s[i] != '/' && s[i] != '\\' {
			return -1
		}
	} else if base == nil || len(s) < 2 || s[0] != '/' && s[0] != '\\' || s[1] != '/' && s[1] != '\\' {
		return -1
	}
	for i < len(s) && (s[i] == '/' || s[i] == '\\') {
		i++
	}
	return i
}

// isASCIIDomain reports whether host is an ASCII domain with an "xn--"
// label (in any case) that the URL Standard takes as it is: no forbidden
// domain code point, no percent-escape (it would decode to anything), and
// not ending in a number (an IPv4 address).
func isASCIIDomain(host string) bool {
	if host == "" {
		return false
	}
	xn := false
	for _, label := range strings.Split(host, ".") {
		if len(label) >= 4 && strings.EqualFold(label[:4], "xn--") {
			xn = true
		}
	}
	for i := 0; i < len(host); i++ {
		switch c := host[i]; {
		case c <= ' ' || c >= 0x7f:
			return false
		case strings.IndexByte("#%/:<>?@[\\]^|", c) >= 0:
			return false
		}
	}
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	return xn && !isNumber(labels[len(labels)-1])
}

// isNumber reports whether label is an IPv4 number the URL Standard's
// "ends in a number" sees: decimal digits, or "0x" and hex digits.
func isNumber(label string) bool {
	if rest, ok := strings.CutPrefix(strings.ToLower(label), "0x"); ok {
		return strings.Trim(rest, "0123456789abcdef") == ""
	}
	return label != "" && strings.Trim(label, "0123456789") == ""
}
