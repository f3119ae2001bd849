package crawllog

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// Reason says why a URL was refused. Its text is what skipped.jsonl and
// the crawl.log annotation "skip:REASON" carry.
type Reason string

// The reasons a URL is refused.
const (
	ReasonScope           Reason = "scope"              // out of --scope
	ReasonFilterSchedule  Reason = "filter-schedule"    // refused by the schedule filter
	ReasonFilterFetch     Reason = "filter-fetch"       // refused by the fetch filter
	ReasonFilterParse     Reason = "filter-parse"       // not parsed: the parse filter
	ReasonFilterFollow    Reason = "filter-follow"      // links not followed: the follow filter
	ReasonFilterStore     Reason = "filter-store"       // not stored: the store filter
	ReasonLength          Reason = "trap-length"        // longer than --max-url-length
	ReasonRedirects       Reason = "trap-redirects"     // redirect chain longer than --max-redirects
	ReasonDepth           Reason = "trap-depth"         // more than --max-depth links from a seed
	ReasonEmbedHops       Reason = "embed-hops"         // a requisite of a document beyond --max-embed-hops or --max-css-hops
	ReasonSitemapNested   Reason = "sitemap-nested"     // a sitemap named by a sitemap index that an index names
	ReasonRepeatedSegment Reason = "trap-segment"       // a path segment repeated past --max-segment-repeats
	ReasonRule            Reason = "rule"               // another URL rule (scheme, form)
	ReasonOverBudget      Reason = "over-budget"        // the host holds --max-urls-per-host URLs
	ReasonRobots          Reason = "robots"             // disallowed by robots.txt
	ReasonAddress         Reason = "address"            // the address guard refused the host's address
	ReasonDNS             Reason = "dns"                // the host name did not resolve
	ReasonBrokenHost      Reason = "broken-host"        // the host was purged after repeated failures
	ReasonRobotsFailed    Reason = "robots-unavailable" // its robots.txt could not be fetched after every retry
	ReasonBlocklist       Reason = "blocklist"          // the operator blocked the host or address
	ReasonNoFollow        Reason = "nofollow"           // the page asked not to follow its links
	ReasonRedirectScope   Reason = "redirect-scope"     // a redirect led out of scope
	ReasonRetries         Reason = "retries-exhausted"  // failed on every try
	ReasonHostDown        Reason = "host-down"          // the host could not be reached for --host-down-give-up
)

// Status is the crawl.log status code of a refusal for r.
func (r Reason) Status() int {
	switch r {
	case ReasonScope, ReasonFilterSchedule, ReasonRedirectScope:
		return StatusOutOfScope
	case ReasonFilterFetch, ReasonFilterParse, ReasonFilterFollow, ReasonFilterStore:
		return StatusBlockedByFilter
	case ReasonLength, ReasonRedirects, ReasonRepeatedSegment, ReasonRule:
		return StatusChaff
	case ReasonDepth, ReasonSitemapNested:
		return StatusTooManyHops
	case ReasonEmbedHops:
		return StatusTooManyEmbedHops
	case ReasonOverBudget:
		return StatusOverQuota
	case ReasonRobots:
		return StatusRobots
	case ReasonAddress, ReasonBlocklist:
		return StatusBlockedByUser
	case ReasonDNS:
		return StatusDNSPrerequisite
	case ReasonBrokenHost, ReasonHostDown:
		return StatusPrerequisite
	case ReasonRobotsFailed:
		return StatusRobotsPrerequisite
	case ReasonRetries:
		return StatusRetriesExhausted
	}
	return StatusOtherFailure
}

// Skip is one line of skipped.jsonl.
type Skip struct {
	Time   time.Time `json:"time"`
	URL    string    `json:"url"`
	Via    string    `json:"via,omitempty"`
	Reason Reason    `json:"reason"`
	Rule   string    `json:"rule,omitempty"` // the filter or robots.txt line that refused it, when known
	Status int       `json:"status"`         // the crawl.log code
}

// AppendTo appends the JSON line, newline included. It writes the same
// JSON encoding/json reads back, without reflection.
func (s *Skip) AppendTo(b []byte) []byte {
	b = append(b, `{"time":"`...)
	b = s.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","url":`...)
	b = appendJSONString(b, s.URL)
	if s.Via != "" {
		b = append(b, `,"via":`...)
		b = appendJSONString(b, s.Via)
	}
	b = append(b, `,"reason":`...)
	b = appendJSONString(b, string(s.Reason))
	if s.Rule != "" {
		b = append(b, `,"rule":`...)
		b = appendJSONString(b, s.Rule)
	}
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(s.Status), 10)
	return append(b, "}\n"...)
}

// appendJSONString appends s as a JSON string; invalid UTF-8 becomes
// U+FFFD, as encoding/json does.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x80 {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = append(b, `\ufffd`...)
			} else if r == '\u2028' || r == '\u2029' {
				b = append(b, `\u202`...)
				b = append(b, "89"[r-'\u2028'])
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
			continue
		}
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			b = append(b, `\u00`...)
			b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		default:
			b = append(b, c)
		}
		i++
	}
	return append(b, '"')
}

// ParseSkip reads one skipped.jsonl line.
func ParseSkip(line []byte) (Skip, error) {
	var s Skip
	err := json.Unmarshal(line, &s)
	return s, err
}
