package robots

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"time"
)

// MaxSize is the number of leading bytes of a robots.txt file that
// [Parse] reads (500 KiB, the minimum RFC 9309 asks parsers to honour);
// the rest is ignored.
const MaxSize = 500 * 1024

// maxCrawlDelay bounds a parsed Crawl-delay; callers cap it further.
const maxCrawlDelay = 24 * time.Hour

// Robots is a parsed robots.txt file, reduced to the rules of the group(s)
// applying to one product token, with the file's Sitemap lines. A Robots is
// immutable and safe for concurrent use; the zero value and nil allow every
// path.
type Robots struct {
	rules    Rules
	sitemaps []string
}

// robotsRule is one Allow or Disallow line, as parsed.
type robotsRule struct {
	allow    bool
	pattern  string // normalised, without a trailing '$'
	anchored bool   // pattern ended with '$'
}

// Parse parses a robots.txt body following RFC 9309 and keeps the rules
// that apply to productToken (for example "Petrel"; only its leading
// letters, '_' and '-' are used). Groups naming the token (case-insensitively)
// are combined; if there is none, the groups for "*" are used; if there is
// none either, everything is allowed. Only the first [MaxSize] bytes
// are parsed; lines that are not "key: value" records are ignored.
func Parse(body []byte, productToken string) *Robots {
	r, _ := parse(body, productToken)
	return r
}

// parse is Parse, also returning the rules in file order.
func parse(body []byte, productToken string) (*Robots, []robotsRule) {
	if len(body) > MaxSize {
		body = body[:MaxSize]
	}
	body = bytes.TrimPrefix(body, []byte("\xEF\xBB\xBF"))
	token := strings.ToLower(productTokenOf(productToken))

	type group struct {
		agents []string // lower-cased product tokens, "*" for any
		rules  []robotsRule
		delay  time.Duration
		hasDly bool
	}
	var (
		groups   []*group
		cur      *group
		inAgents bool // the last record was a user-agent line
		r        = &Robots{}
		rules    []robotsRule
		delay    time.Duration
	)
	for len(body) > 0 {
		var line []byte
		if i := bytes.IndexAny(body, "\r\n"); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			line, body = body, nil
		}
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			continue
		}
		key := strings.ToLower(string(bytes.TrimSpace(line[:colon])))
		val := string(bytes.TrimSpace(line[colon+1:]))
		switch key {
		case "user-agent", "useragent", "user agent":
			if !inAgents {
				cur = &group{}
				groups = append(groups, cur)
			}
			inAgents = true
			agent := "*"
			if !strings.HasPrefix(val, "*") {
				agent = strings.ToLower(productTokenOf(val))
			}
			if agent != "" {
				cur.agents = append(cur.agents, agent)
			}
		case "allow", "disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw":
			inAgents = false
			if cur == nil || val == "" {
				continue // rules outside a group, or empty (no-op) rules
			}
			cur.rules = append(cur.rules, newRule(key == "allow", val))
		case "crawl-delay", "crawldelay", "crawl delay":
			// Crawl-delay is not one of RFC 9309's group records: like any
			// other record it neither starts nor ends a group (section
			// 2.2.4), so user-agent lines around it still share one group.
			if cur == nil {
				continue
			}
			if d, ok := parseDelay(val); ok && !cur.hasDly {
				cur.delay, cur.hasDly = d, true
			}
		case "sitemap", "site-map":
			if val != "" && len(r.sitemaps) < 1000 {
				r.sitemaps = append(r.sitemaps, val)
			}
		default:
			// Unknown records neither start nor end a group.
		}
	}

	pick := func(agent string) bool {
		found := false
		for _, g := range groups {
			for _, a := range g.agents {
				if a == agent {
					found = true
					rules = append(rules, g.rules...)
					if g.hasDly && g.delay > delay {
						delay = g.delay
					}
					break
				}
			}
		}
		return found
	}
	if token == "" || token == "*" || !pick(token) {
		pick("*")
	}
	r.rules = compile(rules, delay)
	return r, rules
}

// productTokenOf returns the leading run of letters, '_' and '-' of s, the
// product token of a user-agent string such as "Petrel/1.0 (+url)".
func productTokenOf(s string) string {
	s = strings.TrimSpace(s)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '-') {
			return s[:i]
		}
	}
	return s
}

func parseDelay(v string) (time.Duration, bool) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || f < 0 {
		return 0, false
	}
	if f > maxCrawlDelay.Seconds() {
		return maxCrawlDelay, true
	}
	return time.Duration(f * float64(time.Second)), true
}

func newRule(allow bool, val string) robotsRule {
	if val[0] != '/' && val[0] != '*' {
		val = "/" + val
	}
	anchored := strings.HasSuffix(val, "$")
	if anchored {
		val = val[:len(val)-1]
	}
	p := normalize(val, true)
	// Collapse runs of '*': they match the same as one.
	for strings.Contains(p, "**") {
		p = strings.ReplaceAll(p, "**", "*")
	}
	return robotsRule{allow: allow, pattern: p, anchored: anchored}
}

// Allowed is [Rules.Allowed] of the rules.
func (r *Robots) Allowed(pathQuery string) bool { return r.Rules().Allowed(pathQuery) }

// Match is [Rules.Match] of the rules.
func (r *Robots) Match(pathQuery string) (allowed bool, rule string) {
	return r.Rules().Match(pathQuery)
}

// CrawlDelay returns the Crawl-delay of the applicable group(s), or 0 if none
// is given. When combined groups disagree, the longest delay is returned.
func (r *Robots) CrawlDelay() time.Duration { return r.Rules().CrawlDelay() }

// Rules returns the compiled rules, without the Sitemap lines: what a
// crawler keeps of the file for its host.
func (r *Robots) Rules() Rules {
	if r == nil {
		return Rules{}
	}
	return r.rules
}

// Sitemaps returns the Sitemap URLs listed anywhere in the file, in order.
// The slice must not be modified.
func (r *Robots) Sitemaps() []string {
	if r == nil {
		return nil
	}
	return r.sitemaps
}

// matchPattern reports whether path matches pattern, where '*' in pattern
// matches any run of octets and anchored requires the match to end at the end
// of path; otherwise the pattern need only match a prefix of path.
func matchPattern(pattern string, anchored bool, path string) bool {
	star := strings.IndexByte(pattern, '*')
	if star < 0 {
		if anchored {
			return path == pattern
		}
		return strings.HasPrefix(path, pattern)
	}
	if !strings.HasPrefix(path, pattern[:star]) {
		return false
	}
	pos := star
	rest := pattern[star+1:]
	for {
		next := strings.IndexByte(rest, '*')
		if next < 0 {
			break
		}
		seg := rest[:next]
		i := strings.Index(path[pos:], seg)
		if i < 0 {
			return false
		}
		pos += i + len(seg)
		rest = rest[next+1:]
	}
	// rest is the segment after the last '*'.
	if anchored {
		return len(path)-len(rest) >= pos && strings.HasSuffix(path, rest)
	}
	return strings.Contains(path[pos:], rest)
}

const upperhex = "0123456789ABCDEF"

// normalizePath puts a path into the canonical form used for matching
// (RFC 9309 section 2.2.2): percent-encoded unreserved characters are
// decoded, other escapes get upper-case hex, and octets that may not appear
// in a URI (non-ASCII, controls, space and a few others) are
// percent-encoded. In the query, escapes of ':', '/', '@' and '?' are
// decoded too. A '%' not starting a valid escape is encoded as "%25".
// '*' and '$' are encoded as "%2A" and "%24", the form a pattern gives
// its literal ones.
func normalizePath(s string) string { return normalize(s, false) }

// normalize is [normalizePath] for a path, or for a pattern if pattern is
// set: then '*' stays the wildcard and only a '$' (the anchoring one is
// already cut) is encoded, so "%2A" and "%24" in a pattern match the literal
// characters (RFC 9309 figure 6).
func normalize(s string, pattern bool) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '%' || needsEscape(c) || c == '$' || c == '*' && !pattern {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	inQuery := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '?':
			inQuery = true
			b.WriteByte(c)
		case c == '%':
			if i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
				v := unhex(s[i+1])<<4 | unhex(s[i+2])
				if isUnreserved(v) || (inQuery && isQuerySafe(v)) {
					b.WriteByte(v)
				} else {
					b.WriteByte('%')
					b.WriteByte(upperhex[v>>4])
					b.WriteByte(upperhex[v&15])
				}
				i += 2
			} else {
				b.WriteString("%25")
			}
		case needsEscape(c) || c == '$' || c == '*' && !pattern:
			b.WriteByte('%')
			b.WriteByte(upperhex[c>>4])
			b.WriteByte(upperhex[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func needsEscape(c byte) bool {
	if c <= ' ' || c >= 0x7F {
		return true
	}
	switch c {
	case '"', '<', '>', '\\', '^', '`', '{', '|', '}':
		return true
	}
	return false
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// isQuerySafe reports whether c, percent-encoded in a query, is decoded
// for matching: RFC 9309's table 1 treats "https://foo.bar" and
// "https%3A%2F%2Ffoo.bar" in a query as the same.
func isQuerySafe(c byte) bool {
	return c == ':' || c == '/' || c == '@' || c == '?'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
