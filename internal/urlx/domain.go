package urlx

import (
	"net/netip"
	"strings"

	"github.com/weppos/publicsuffix-go/publicsuffix"

	"github.com/petrel-crawler/petrel/internal/ascii"
)

// pslOptions selects both the ICANN and the private sections of the Public
// Suffix List (so that "alice.github.io" and "bob.github.io" are distinct
// registered domains, as browsers treat them for cookies), and the default
// rule "*", which makes any unknown TLD a one-label public suffix. It is
// never modified.
var pslOptions = &publicsuffix.FindOptions{IgnorePrivate: false, DefaultRule: publicsuffix.DefaultRule}

// RegisteredDomain returns the registered domain of host (eTLD+1) by the
// Public Suffix List, ICANN and private rules included: "www.example.co.uk"
// gives "example.co.uk", "alice.github.io" gives "alice.github.io". A host
// under a TLD the list does not know (such as the special-use "test") is
// treated as if the TLD were a public suffix: "a.b.shop.test" gives
// "shop.test". IP literals, single-label hosts and hosts that are themselves
// public suffixes are returned unchanged. The result is lower-case, without
// a trailing dot.
func RegisteredDomain(host string) string {
	h := strings.TrimSuffix(toLowerASCII(host), ".")
	if h == "" || h[0] == '[' || strings.IndexByte(h, '.') < 0 {
		return h
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return h
	}
	d, err := publicsuffix.DomainFromListWithOptions(publicsuffix.DefaultList, h, pslOptions)
	if err != nil || d == "" {
		return h
	}
	return d
}

// SURT returns the Sort-friendly URI Reordering Transform of u as Heritrix
// writes it: the host labels reversed and comma-separated inside
// parentheses, each followed by a comma, then the port if any, then the path
// and query. For example "http://www.example.com:8080/a?q" becomes
// "http://(com,example,www,:8080)/a?q". IP literals are not reversed:
// "http://(127.0.0.1)/".
func SURT(u URL) string {
	host := strings.TrimSuffix(u.Host, ".")
	b := make([]byte, 0, len(u.Scheme)+len(host)+len(u.Port)+len(u.PathQuery)+8)
	b = append(b, u.Scheme...)
	b = append(b, "://("...)
	if isIPLiteral(host) {
		b = append(b, host...)
	} else {
		for h := host; h != ""; {
			i := strings.LastIndexByte(h, '.')
			b = append(b, h[i+1:]...)
			b = append(b, ',')
			if i < 0 {
				break
			}
			h = h[:i]
		}
	}
	if u.Port != "" {
		b = append(b, ':')
		b = append(b, u.Port...)
	}
	b = append(b, ')')
	b = append(b, u.PathQuery...)
	return string(b)
}

func isIPLiteral(host string) bool {
	if host == "" {
		return false
	}
	if host[0] == '[' {
		return true
	}
	_, err := netip.ParseAddr(host)
	return err == nil
}

// IsSpecialUseName reports whether host is one of the special-use domain
// names of RFC 6761 that never resolve on the public Internet: "localhost",
// "test", "invalid", "example", or a name ending in ".localhost", ".test",
// ".invalid" or ".example". The comparison ignores ASCII case and a trailing
// dot.
func IsSpecialUseName(host string) bool {
	h := strings.TrimSuffix(host, ".")
	tld := h[strings.LastIndexByte(h, '.')+1:]
	return ascii.EqualFold(tld, "localhost") || ascii.EqualFold(tld, "test") ||
		ascii.EqualFold(tld, "invalid") || ascii.EqualFold(tld, "example")
}

func toLowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			return string(appendLower(make([]byte, 0, len(s)), s))
		}
	}
	return s
}
