package testweb

import (
	"bufio"
	"bytes"
	"strings"
)

// robotsRule is one allow or disallow line of a robots.txt group.
type robotsRule struct {
	allow   bool
	pattern string
}

// robotsRules is the group of a robots.txt file that applies to one product
// token, parsed as RFC 9309 describes. A nil *robotsRules allows everything.
type robotsRules struct {
	rules []robotsRule
}

// parseRobots returns the rules of body that apply to the product token
// agent (matched case-insensitively; the "*" group is used when no group
// names the agent). Only the first 500 KiB of body are read.
func parseRobots(body []byte, agent string) *robotsRules {
	const limit = 500 << 10
	if len(body) > limit {
		body = body[:limit]
	}
	agent = strings.ToLower(agent)
	var (
		specific, star []robotsRule
		haveSpecific   bool
		haveStar       bool
		inAgents       bool // previous line was a user-agent line
		curSpecific    bool
		curStar        bool
	)
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 4096), limit+1)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		switch key {
		case "user-agent":
			if !inAgents {
				curSpecific, curStar = false, false
			}
			inAgents = true
			tok := strings.ToLower(val)
			if tok == "*" {
				curStar = true
				haveStar = true
			} else if tok == agent {
				curSpecific = true
				haveSpecific = true
			}
		case "allow", "disallow":
			inAgents = false
			if val == "" {
				continue
			}
			r := robotsRule{allow: key == "allow", pattern: val}
			if curSpecific {
				specific = append(specific, r)
			}
			if curStar {
				star = append(star, r)
			}
		default:
			inAgents = false
		}
	}
	switch {
	case haveSpecific:
		return &robotsRules{rules: specific}
	case haveStar:
		return &robotsRules{rules: star}
	}
	return &robotsRules{}
}

// allowed reports whether path (path and query, starting with "/") may be
// fetched: the longest matching pattern wins, and allow wins a tie.
func (r *robotsRules) allowed(path string) bool {
	if r == nil || path == "/robots.txt" {
		return true
	}
	best, allow := -1, true
	for _, rule := range r.rules {
		if !robotsMatch(rule.pattern, path) {
			continue
		}
		n := len(rule.pattern)
		if n > best || (n == best && rule.allow) {
			best, allow = n, rule.allow
		}
	}
	return allow
}

// robotsMatch reports whether pattern (with RFC 9309's "*" and a final "$")
// matches a prefix of path, or all of it when anchored.
func robotsMatch(pattern, path string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(path, parts[0]) {
		return false
	}
	rest := path[len(parts[0]):]
	if len(parts) == 1 {
		return !anchored || rest == ""
	}
	for i, p := range parts[1:] {
		last := i == len(parts)-2
		if last && anchored {
			return strings.HasSuffix(rest, p)
		}
		j := strings.Index(rest, p)
		if j < 0 {
			return false
		}
		rest = rest[j+len(p):]
	}
	return true
}
