package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/fetch"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/robots"
	"github.com/petrel-crawler/petrel/internal/stats"
)

// decisionAgent is an Agent with what outcome and robotsRules read.
func decisionAgent() *Agent {
	a := &Agent{stats: new(stats.Crawl), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	a.cfg.UserAgent = "Petrel/1.0 (+https://example.test/)"
	a.cfg.Filter.Traps.MaxRedirects = 5
	return a
}

func response(status int, header http.Header, body string) *fetch.Response {
	if header == nil {
		header = http.Header{}
	}
	end := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	return &fetch.Response{URL: "http://a.test/robots.txt", Status: status, Header: header, Body: []byte(body),
		Start: end.Add(-250 * time.Millisecond), End: end}
}

// TestOutcome: what the scheduler is told for each kind of fetch — retry
// or not, Retry-After, duration and end from the response.
func TestOutcome(t *testing.T) {
	page := &frontier.Task{SchemeAuthority: "http://a.test", PathQuery: "/x"}
	for _, c := range []struct {
		name       string
		resp       *fetch.Response
		err        error
		result     frontier.Result
		retryAfter time.Duration
		errors     int64
	}{
		{"200", response(200, nil, "ok"), nil, frontier.Fetched, 0, 0},
		{"404", response(404, nil, ""), nil, frontier.Fetched, 0, 0},
		{"301", response(301, http.Header{"Location": {"/y"}}, ""), nil, frontier.Fetched, 0, 0},
		{"503", response(503, nil, ""), nil, frontier.RetryLater, 0, 0},
		{"503 Retry-After 7", response(503, http.Header{"Retry-After": {"7"}}, ""), nil, frontier.RetryLater, 7 * time.Second, 0},
		{"429 Retry-After date", response(429, http.Header{"Retry-After": {"Thu, 01 Jan 2026 00:01:01 GMT"}}, ""), nil, frontier.RetryLater, time.Minute, 0},
		{"500 Retry-After junk", response(500, http.Header{"Retry-After": {"soon"}}, ""), nil, frontier.RetryLater, 0, 0},
		{"refused", nil, fmt.Errorf("dial: %w", syscall.ECONNREFUSED), frontier.RetryLater, 0, 1},
		{"timeout", nil, fmt.Errorf("get: %w", context.DeadlineExceeded), frontier.RetryLater, 0, 1},
		{"forbidden address", nil, fmt.Errorf("dial: %w", fetch.ErrForbiddenAddress), frontier.Failed, 0, 1},
		// A permanent error: the same malformed head again on every try.
		{"control bytes in Location", nil, errors.New(`net/http: HTTP/1.x transport connection broken: malformed MIME header line: "Location: /a\x01b"`), frontier.Failed, 0, 1},
		{"bad status line", nil, errors.New(`net/http: HTTP/1.x transport connection broken: malformed HTTP response "HTTX/9 banana"`), frontier.Failed, 0, 1},
		{"headers too large", nil, fmt.Errorf("read: %w", fetch.ErrHeaderTooLarge), frontier.Failed, 0, 1},
	} {
		a := decisionAgent()
		o := a.outcome(page, c.resp, c.err)
		if o.Result != c.result || o.RetryAfter != c.retryAfter || a.stats.FetchErrors.Load() != c.errors {
			t.Errorf("%s: result %v, Retry-After %v, %d errors; want %v, %v, %d", c.name, o.Result, o.RetryAfter,
				a.stats.FetchErrors.Load(), c.result, c.retryAfter, c.errors)
		}
		if c.resp != nil && (!o.End.Equal(c.resp.End) || o.Duration != 250*time.Millisecond) {
			t.Errorf("%s: end %v duration %v, want the response's", c.name, o.End, o.Duration)
		}
		if o.Robots != nil || o.RobotsRedirect != "" {
			t.Errorf("%s: a page task got robots.txt results", c.name)
		}
	}
}

// TestRobotsDecisions: a robots.txt response becomes rules (2xx), allow
// all (4xx, a redirect not followed), nil so it is retried (5xx, 429), or a
// redirect hop for the scheduler to follow (same authority, within the
// limit).
func TestRobotsDecisions(t *testing.T) {
	const body = "User-agent: petrel\nDisallow: /private\nCrawl-delay: 3\n"
	for _, c := range []struct {
		name     string
		resp     *fetch.Response
		hops     int
		redirect string
		rules    string // "nil", "all" or "parsed"
	}{
		{"200", response(200, nil, body), 0, "", "parsed"},
		{"404", response(404, nil, ""), 0, "", "all"},
		{"403", response(403, nil, ""), 0, "", "all"},
		{"503", response(503, nil, ""), 0, "", "nil"},
		{"429", response(429, nil, ""), 0, "", "nil"},
		{"301 same authority", response(301, http.Header{"Location": {"/other/robots.txt?v=2"}}, ""), 0, "/other/robots.txt?v=2", ""},
		{"302 at the hop limit", response(302, http.Header{"Location": {"/r2"}}, ""), 5, "", "all"},
		{"301 other host", response(301, http.Header{"Location": {"http://b.test/robots.txt"}}, ""), 0, "", "all"},
		{"301 other scheme", response(301, http.Header{"Location": {"https://a.test/robots.txt"}}, ""), 0, "", "all"},
		{"301 no Location", response(301, nil, ""), 0, "", "all"},
	} {
		a := decisionAgent()
		task := &frontier.Task{SchemeAuthority: "http://a.test", PathQuery: "/robots.txt", Robots: true, RobotsHops: c.hops}
		o := a.outcome(task, c.resp, nil)
		if o.RobotsRedirect != c.redirect {
			t.Errorf("%s: redirect %q, want %q", c.name, o.RobotsRedirect, c.redirect)
		}
		var got string
		switch {
		case c.redirect != "":
			got = ""
		case o.Robots == nil:
			got = "nil"
		case o.Robots == robots.AllowAll:
			got = "all"
		default:
			got = "parsed"
			if o.Robots.Allowed("/private/x") || !o.Robots.Allowed("/public") || o.Robots.CrawlDelay() != 3*time.Second {
				t.Errorf("%s: rules not those of the body", c.name)
			}
		}
		if got != c.rules {
			t.Errorf("%s: rules %s, want %s", c.name, got, c.rules)
		}
	}
}

// TestRetryAfter: seconds or an HTTP date, capped at a day; anything else
// (a past date, a negative number, junk) is no wait.
func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		h    string
		want time.Duration
	}{
		{"", 0}, {"0", 0}, {"120", 2 * time.Minute}, {"-5", 0}, {"1.5", 0}, {"soon", 0},
		{"999999", 24 * time.Hour},
		{"9223372037", 24 * time.Hour}, // seconds whose nanoseconds wrap int64
		{"18446744073", 24 * time.Hour},
		{"Thu, 01 Jan 2026 00:00:30 GMT", 30 * time.Second},
		{"Wed, 31 Dec 2025 23:00:00 GMT", 0},
		{"Sat, 03 Jan 2026 00:00:00 GMT", 24 * time.Hour},
	} {
		if got := retryAfter(c.h, now); got != c.want {
			t.Errorf("retryAfter(%q) = %v, want %v", c.h, got, c.want)
		}
	}
}
