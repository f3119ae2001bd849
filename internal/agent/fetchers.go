package agent

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/petrel-crawler/petrel/internal/fetch"
	"github.com/petrel-crawler/petrel/internal/frontier"
)

// fetched is a response on its way from a fetcher to a parser.
type fetched struct {
	task *frontier.Task
	resp *fetch.Response
}

// robotsCap is how much of a robots.txt is read (RFC 9309 allows a crawler
// to stop at 500 KiB).
const robotsCap = fetch.MaxRobotsSize

// fetchLoop is one fetcher: it takes tasks until the scheduler closes Todo,
// fetches each once, hands the task back with its outcome, and passes the
// response on to the parsers.
func (a *Agent) fetchLoop(ctx context.Context, results chan<- *fetched) {
	fr := a.frontier
	for {
		waitStart := time.Now()
		t, ok := <-fr.Todo()
		if !ok {
			return
		}
		a.stats.FetcherWaitNano.Add(int64(time.Since(waitStart)))
		a.stats.FetcherWaits.Add(1)
		if ctx.Err() != nil {
			fr.Done(frontier.Outcome{Task: t, Result: frontier.Abandoned, End: time.Now()})
			continue
		}
		resp, err := a.fetcher.Fetch(ctx, fetch.Request{URL: t.URL(), Addr: t.Addr, Robots: t.Robots})
		if ctx.Err() != nil {
			// Stopped mid-fetch: the URL goes back to its queue, nothing is stored.
			if resp != nil {
				resp.Release()
			}
			fr.Done(frontier.Outcome{Task: t, Result: frontier.Abandoned, End: time.Now()})
			continue
		}
		o := a.outcome(t, resp, err)
		if resp != nil && resp.Status > 0 {
			fr.Acquire()
			fr.Done(o)
			results <- &fetched{task: t, resp: resp}
			continue
		}
		if resp != nil {
			resp.Release()
		}
		fr.Done(o)
	}
}

// outcome turns a fetch into what the scheduler needs to know, and counts
// failures.
func (a *Agent) outcome(t *frontier.Task, resp *fetch.Response, err error) frontier.Outcome {
	o := frontier.Outcome{Task: t, Result: frontier.Fetched, End: time.Now()}
	if resp != nil && !resp.End.IsZero() {
		o.End = resp.End
		o.Duration = resp.End.Sub(resp.Start)
	}
	if err != nil {
		kind := fetch.Classify(err)
		a.stats.FetchErrors.Add(1)
		if kind == fetch.ErrTimeout {
			a.stats.Timeouts.Add(1)
		}
		a.log.Info("fetch failed", "url", t.URL(), "kind", kind.String(), "err", err)
		if kind == fetch.ErrForbidden {
			o.Result = frontier.Failed
			a.stats.AddressRefused.Add(1)
		} else {
			o.Result = frontier.RetryLater
		}
		return o
	}
	if resp.Status >= 500 || resp.Status == http.StatusTooManyRequests {
		o.Result = frontier.RetryLater
		o.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), o.End)
	}
	if t.Robots {
		o.Robots = a.robotsRules(resp)
	}
	return o
}

// robotsRules interprets a robots.txt response as RFC 9309 says: 2xx is
// parsed; 4xx (and, for now, a redirect) means no rules; 5xx and 429 mean
// "unreachable": nil, so the scheduler retries later and fetches nothing
// else meanwhile.
func (a *Agent) robotsRules(resp *fetch.Response) frontier.RobotsRules {
	switch {
	case resp.Status >= 200 && resp.Status < 300:
		body, err := fetch.DecodeBody(resp, robotsCap)
		if err != nil {
			a.log.Info("robots.txt body", "url", resp.URL, "err", err)
		}
		return fetch.ParseRobots(body, a.productToken())
	case resp.Status == http.StatusTooManyRequests || resp.Status >= 500:
		return nil
	default:
		return fetch.AllowAll
	}
}

// productToken is the robots.txt product token of the user agent: its
// first word, without version.
func (a *Agent) productToken() string {
	ua := a.cfg.UserAgent
	for i := 0; i < len(ua); i++ {
		if c := ua[i]; c == '/' || c == ' ' || c == '(' {
			return ua[:i]
		}
	}
	return ua
}

// retryAfter parses a Retry-After header (seconds or an HTTP date), capped
// at a day.
func retryAfter(h string, now time.Time) time.Duration {
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		return min(time.Duration(s)*time.Second, 24*time.Hour)
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return min(t.Sub(now), 24*time.Hour)
	}
	return 0
}
