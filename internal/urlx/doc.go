// Package urlx parses and normalises URLs the way Petrel's crawler sees
// them.
//
// Parsing is browser-compatible: every input is read as the WHATWG URL
// Standard reads it (github.com/nlnwa/whatwg-url), so a link is followed to
// the same place a browser would follow it. Petrel's normalisation is then
// applied on top:
//
//   - only http and https are accepted; any other scheme is an error
//     wrapping ErrUnsupportedScheme;
//   - scheme and host are lower-cased, an internationalised host is
//     converted to ASCII (punycode), IPv4 hosts are in dotted-decimal form
//     and IPv6 hosts in their compressed form within brackets; an all-ASCII
//     domain is only lower-cased, its "xn--" labels unchecked, as the
//     current URL Standard says (whatwg-url refuses invalid Punycode there;
//     asciidomain.go applies the rule);
//   - the scheme's default port, the user information and the fragment are
//     removed;
//   - dot-segments are resolved and an empty path becomes "/";
//   - percent-escapes of unreserved characters (ALPHA, DIGIT, "-", ".",
//     "_", "~") are decoded, the hex digits of other escapes are
//     upper-cased, and a "%" that starts no valid escape is written "%25";
//   - an empty query ("?" alone) is removed.
//
// Invariants: a URL returned by Parse or Resolve is normalised, so two such
// URLs name the same resource exactly when they are equal; its PathQuery
// starts with "/"; and normalisation is idempotent: parsing u.String() gives
// u back.
//
// URL resolution is on the crawler's hot path (every link of every page).
// The common shapes of references (ASCII absolute URLs with plain host names,
// scheme-relative, absolute-path, relative-path and query-only references)
// take a fast path that allocates once; everything else goes through the
// WHATWG parser. Tests check that both paths agree.
//
// The package also computes the keys the crawler groups URLs by: the scheme
// and authority (politeness key), the registered domain (eTLD+1, from the
// Public Suffix List), and the Heritrix SURT form.
package urlx
