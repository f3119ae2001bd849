package robots

import (
	"errors"
	"slices"
	"time"
	"unique"
)

// Rules is the compiled form of the rules of a robots.txt that apply to one
// product token: its Crawl-delay and its Allow and Disallow lines in the
// order in which they decide, in one flat string. Equal rule sets share
// that string (interned by content with package unique, never by a hash
// alone), so a crawler holding the rules of a million hosts holds each
// distinct set once. A Rules is a value of one pointer: it costs no
// allocation in an interface. The zero value allows every path and has no
// Crawl-delay.
//
// # Flat form
//
// The flat form is what [Rules.AppendBinary] writes and [FromBinary] reads
// (stores keep it on disk, so it does not change without a new version of
// theirs):
//
//	uvarint  Crawl-delay in nanoseconds (≤ 24 h)
//	rule*    until the end:
//	  byte     flags: 1 Allow (else Disallow), 2 anchored (the pattern ended with '$')
//	  uvarint  pattern length n (> 0)
//	  n bytes  pattern, normalised as [Parse] does, '$' cut
//
// The rules are sorted by decreasing specificity (pattern length, plus one
// when anchored), Allow before Disallow at equal specificity, file order
// otherwise, and repeated rules are kept once: the first rule that matches
// a path decides, which is RFC 9309's longest match with Allow winning a
// tie. The empty string is the zero value's form; a set without rules
// whose delay is 0 is always the zero value.
type Rules struct{ h unique.Handle[string] }

// AllowAll allows every path: the rules of a site whose robots.txt is
// missing (4xx). It is the zero Rules.
var AllowAll = Rules{}

// DisallowAll disallows every path but /robots.txt itself: the rules of a
// site whose robots.txt is unreachable (5xx, network failure).
var DisallowAll = compile([]robotsRule{{allow: false, pattern: "/"}}, 0)

// ErrBadRules reports a flat form that [FromBinary] cannot read.
var ErrBadRules = errors.New("robots: malformed compiled rules")

const (
	flagAllow    = 1
	flagAnchored = 2
)

// compile makes the Rules of parsed rules (in file order) and a delay.
func compile(rules []robotsRule, delay time.Duration) Rules {
	if len(rules) == 0 && delay == 0 {
		return Rules{}
	}
	spec := func(r robotsRule) int {
		if r.anchored {
			return len(r.pattern) + 1
		}
		return len(r.pattern)
	}
	sorted := slices.Clone(rules)
	slices.SortStableFunc(sorted, func(a, b robotsRule) int {
		if sa, sb := spec(a), spec(b); sa != sb {
			return sb - sa
		}
		switch {
		case a.allow == b.allow:
			return 0
		case a.allow:
			return -1
		}
		return 1
	})
	b := appendUvarint(nil, uint64(delay))
	seen := make(map[robotsRule]bool, len(sorted))
	for _, r := range sorted {
		if seen[r] || r.pattern == "" {
			continue
		}
		seen[r] = true
		var fl byte
		if r.allow {
			fl |= flagAllow
		}
		if r.anchored {
			fl |= flagAnchored
		}
		b = append(b, fl)
		b = appendUvarint(b, uint64(len(r.pattern)))
		b = append(b, r.pattern...)
	}
	return Rules{unique.Make(string(b))}
}

// flat is the flat form ("" for the zero value).
func (r Rules) flat() string {
	if r.h == (unique.Handle[string]{}) {
		return ""
	}
	return r.h.Value()
}

// Allowed reports whether the path (with its query, if any) may be fetched.
// The longest matching rule wins; on a tie between Allow and Disallow, Allow
// wins; with no matching rule the path is allowed. "/robots.txt" is always
// allowed. Percent-encoding is normalised on both sides before matching.
func (r Rules) Allowed(pathQuery string) bool {
	ok, _ := r.Match(pathQuery)
	return ok
}

// Match is Allowed, with the rule that decides, as written in robots.txt
// ("Disallow: /private/"), or "" when no rule matches.
func (r Rules) Match(pathQuery string) (allowed bool, rule string) {
	f := r.flat()
	_, n := uvarint(f)
	f = f[n:]
	if f == "" || pathQuery == "/robots.txt" {
		return true, ""
	}
	if pathQuery == "" {
		pathQuery = "/"
	}
	p := normalizePath(pathQuery)
	for f != "" {
		fl := f[0]
		l, n := uvarint(f[1:])
		pat := f[1+n : 1+n+int(l)]
		f = f[1+n+int(l):]
		if !matchPattern(pat, fl&flagAnchored != 0, p) {
			continue
		}
		rule = "Disallow: " + pat
		if fl&flagAllow != 0 {
			rule = "Allow: " + pat
		}
		if fl&flagAnchored != 0 {
			rule += "$"
		}
		return fl&flagAllow != 0, rule
	}
	return true, ""
}

// CrawlDelay returns the Crawl-delay of the rules, 0 if none was given.
func (r Rules) CrawlDelay() time.Duration {
	d, _ := uvarint(r.flat())
	return time.Duration(d)
}

// Size is the length of the flat form in bytes.
func (r Rules) Size() int { return len(r.flat()) }

// AppendBinary appends the flat form of r to b.
func (r Rules) AppendBinary(b []byte) ([]byte, error) { return append(b, r.flat()...), nil }

// FromBinary returns the Rules of a flat form, checking it: the delay in
// range, every rule whole, with a known flag and a non-empty pattern, the
// rules in deciding order. The bytes are not retained.
func FromBinary(b []byte) (Rules, error) {
	if len(b) == 0 {
		return Rules{}, nil
	}
	f := string(b)
	d, n := uvarint(f)
	if n <= 0 || d > uint64(maxCrawlDelay) {
		return Rules{}, ErrBadRules
	}
	last := -1
	lastAllow := true
	for rest := f[n:]; rest != ""; {
		fl := rest[0]
		l, m := uvarint(rest[1:])
		if fl&^(flagAllow|flagAnchored) != 0 || m <= 0 || l == 0 || l > uint64(len(rest)-1-m) {
			return Rules{}, ErrBadRules
		}
		spec, allow := int(l), fl&flagAllow != 0
		if fl&flagAnchored != 0 {
			spec++
		}
		if last >= 0 && (spec > last || spec == last && allow && !lastAllow) {
			return Rules{}, ErrBadRules
		}
		last, lastAllow = spec, allow
		rest = rest[1+m+int(l):]
	}
	if f == "\x00" {
		return Rules{}, nil
	}
	return Rules{unique.Make(f)}, nil
}

func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// uvarint decodes a uvarint at the start of s: the value and its length,
// 0 for an empty s, a negative length for a malformed one.
func uvarint(s string) (uint64, int) {
	var v uint64
	for i := 0; i < len(s) && i < 10; i++ {
		c := s[i]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1
		}
	}
	if s == "" {
		return 0, 0
	}
	return 0, -1
}
