package agent

import (
	"context"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/petrel-crawler/petrel/internal/console"
	"github.com/petrel-crawler/petrel/internal/crawllog"
	"github.com/petrel-crawler/petrel/internal/fetch"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/revisit"
	"github.com/petrel-crawler/petrel/internal/robots"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// fetched is a response on its way from a fetcher to a parser.
type fetched struct {
	task    *frontier.Task
	resp    *fetch.Response
	fetcher int // the fetcher's number, from 1 (for the crawl log)
	// revisit is the schedule's state of the URL of a revisit task
	// (revisits.go); nil for any other.
	revisit *revisit.State
}

// robotsCap is how much of a robots.txt is read (RFC 9309 allows a crawler
// to stop at 500 KiB).
const robotsCap = robots.MaxSize

// fetchLoop is one fetcher: it takes tasks until the scheduler closes Todo,
// fetches each once, hands the task back with its outcome, and passes the
// response on to the parsers.
//
// stop is the crawl's context: once it is done no new task starts (tasks
// are handed back as abandoned). quit closes when the pool of fetchers
// shrinks: the fetcher ends after its task. ctx bounds the fetches themselves: it ends
// a grace period after stop, so that fetches in flight can finish and be
// stored rather than be fetched again after a resume.
func (a *Agent) fetchLoop(stop, ctx context.Context, id int, quit <-chan struct{}, results chan<- *fetched) {
	fr := a.frontier
	for {
		waitStart := time.Now()
		var t *frontier.Task
		var ok bool
		select {
		case t, ok = <-fr.Todo():
		case <-quit:
			return // the pool shrank
		}
		if !ok {
			return
		}
		a.stats.FetcherWaitNano.Add(int64(time.Since(waitStart)))
		a.stats.FetcherWaits.Add(1)
		// The fetch begins now: a task recalled by a Reconfigure that
		// returned before this moment is handed back, not fetched.
		start := time.Now()
		if stop.Err() != nil || fr.Recalled(t) {
			fr.Done(frontier.Outcome{Task: t, Result: frontier.Abandoned, End: time.Now()})
			continue
		}
		if a.block.addr(t.Addr) || a.block.host(t.Host()) {
			// Blocked after it was queued (or in an earlier run): dropped,
			// not fetched, with its host's queue.
			a.stats.Blocked.Add(1)
			a.stats.BlockedQueued.Add(1)
			if !t.Robots {
				a.refuse(t.URL(), a.vias.name(t.Meta.Via), t.Meta, crawllog.ReasonBlocklist, "")
			}
			fr.Done(frontier.Outcome{Task: t, Result: frontier.Blocked, End: time.Now()})
			continue
		}
		// An agent that may be cut off from the crawl starts nothing.
		fctx, guardDone, ok := a.guardedFetch(stop, ctx, t)
		if !ok {
			continue
		}
		var resp *fetch.Response
		var err error
		l := a.live.Load()
		req := fetch.Request{URL: t.URL(), Addr: t.Addr, Robots: t.Robots, Timeout: l.timeout}
		if !t.Robots {
			req.MaxBody = l.maxBody
		}
		rv, fetchIt := a.claimRevisit(t, &req) // revisits.go
		if !fetchIt {
			// A revisit for a due time done already: finished unfetched
			// (no request was made; the key's delay still applies).
			guardDone()
			fr.Done(frontier.Outcome{Task: t, Result: frontier.Fetched, End: time.Now()})
			continue
		}
		resp, err = a.fetcher.Fetch(fctx, req)
		cut := ctx.Err() != nil || a.guardCut(fctx, err) // clusterguard.go
		guardDone()
		if cut {
			// Stopped mid-fetch (or cut by the zombie guard): the URL goes
			// back to its queue, nothing is stored.
			if resp != nil {
				resp.Release()
			}
			a.noteGuardCut(t) // clusterguard.go
			a.unclaimRevisit(t, rv, false)
			fr.Done(frontier.Outcome{Task: t, Result: frontier.Abandoned, End: time.Now()})
			continue
		}
		o := a.outcome(t, resp, err)
		if resp != nil && resp.Status > 0 {
			fr.Acquire(t)
			fr.Done(o)
			results <- &fetched{task: t, resp: resp, fetcher: id, revisit: rv}
			continue
		}
		a.unclaimRevisit(t, rv, true)
		a.logFailure(t, id, fetch.Classify(err), start, resp)
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
	a.countConn(resp)
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
		if !t.Robots {
			a.noteSeed(t.URL(), t.Meta, "fetch failed: "+err.Error()) // seedfailures.go
		}
		if a.tally != nil {
			a.tally.Record(console.Fetch{URL: t.URL(), Host: t.SchemeAuthority, Err: kind.String() + ": " + err.Error(), Robots: t.Robots, Time: o.End})
		}
		if fetch.IsCertificateError(err) {
			a.stats.TLSRefused.Add(1) // --tls-verify strict
		}
		switch {
		case kind == fetch.ErrForbidden:
			o.Result = frontier.Failed
			a.stats.AddressRefused.Add(1)
		case fetch.Unreachable(err):
			o.Result = frontier.Unreachable // the host backs off, the URL waits
			a.seedHosts.unreachable(t.Host(), err, a.frontier.Settings().HostDownGiveUp)
		case !t.Robots && fetch.Permanent(err):
			o.Result = frontier.Failed // the same response again: no retry
		default:
			o.Result = frontier.RetryLater
		}
		return o
	}
	if resp.Status >= 500 || resp.Status == http.StatusTooManyRequests {
		o.Result = frontier.RetryLater
		o.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), o.End)
	}
	if t.Robots {
		if next, ok := a.robotsRedirect(t, resp); ok {
			o.RobotsRedirect = next
			a.stats.RobotsRedirects.Add(1)
		} else {
			o.Robots = a.robotsRules(resp)
		}
	}
	return o
}

// countConn counts the connection resp went on: kept alive, or opened
// for it with a full or a resumed TLS handshake; and its HTTP/2 stream.
func (a *Agent) countConn(resp *fetch.Response) {
	h2 := resp != nil && resp.Proto == fetch.Proto2
	if h2 {
		a.stats.H2Streams.Add(1)
	}
	switch {
	case resp == nil:
	case resp.Reused:
		a.stats.ConnsReused.Add(1)
	default:
		a.stats.ConnsOpened.Add(1)
		if h2 {
			a.stats.H2Conns.Add(1)
		}
		if resp.TLS == nil {
			break
		}
		if resp.TLS.Resumed {
			a.stats.TLSResumed.Add(1)
		} else {
			a.stats.TLSFull.Add(1)
		}
	}
}

// robotsRedirect returns the path+query a robots.txt redirect points to
// when RFC 9309 §2.3.1.2 has it followed (at least five hops; here up to
// --max-redirects): the scheduler fetches it next as a robots task of the
// same key, after the key's and the IP's delays. A hop to another scheme
// or authority is not followed (its host may sit on an address whose
// politeness this key does not hold); that response, a redirect, then
// counts as "unavailable" (allow all, as RFC 9309 permits).
func (a *Agent) robotsRedirect(t *frontier.Task, resp *fetch.Response) (string, bool) {
	if resp.Status < 300 || resp.Status >= 400 || t.RobotsHops >= a.cfg.Filter.Traps.MaxRedirects {
		return "", false
	}
	next, ok := a.robotsHop(t, resp)
	if !ok {
		return "", false
	}
	return next[len(t.SchemeAuthority):], true
}

// robotsHop returns the target of a robots.txt redirect if it may be
// followed within the task: same scheme and authority as the task.
func (a *Agent) robotsHop(t *frontier.Task, resp *fetch.Response) (string, bool) {
	loc := resp.Header.Get("Location")
	if loc == "" {
		return "", false
	}
	base, err := urlx.Parse(resp.URL)
	if err != nil {
		return "", false
	}
	u, err := base.Resolve(loc)
	if err != nil || u.SchemeAuthority() != t.SchemeAuthority {
		a.log.Info("robots.txt redirect not followed", "url", resp.URL, "location", loc)
		return "", false
	}
	return u.String(), true
}

// robotsRules interprets a robots.txt response as RFC 9309 says: 2xx is
// parsed; 4xx, and a redirect that was not followed (see robotsRedirect), mean
// no rules; 5xx and 429 mean "unreachable": nil, so the scheduler retries
// later and fetches nothing else meanwhile.
func (a *Agent) robotsRules(resp *fetch.Response) frontier.RobotsRules {
	switch {
	case resp.Status >= 200 && resp.Status < 300:
		body, err := fetch.DecodeBody(resp, robotsCap)
		if err != nil {
			a.log.Info("robots.txt body", "url", resp.URL, "err", err)
		}
		return robots.Parse(body, a.productToken()).Rules()
	case resp.Status == http.StatusTooManyRequests || resp.Status >= 500:
		return nil
	default:
		return robots.AllowAll
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
		return time.Duration(min(s, 24*60*60)) * time.Second // capped before the product can wrap
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return min(t.Sub(now), 24*time.Hour)
	}
	return 0
}

// hostMoved is the frontier's Moved: a key of host now goes to its new
// address, so the idle keep-alive connections (some dialled to the old
// one, which the transport would reuse for the host) are closed.
func (a *Agent) hostMoved(host string, from, to netip.Addr) {
	a.log.Info("host moved to a new address", "host", host, "from", from, "to", to)
	if a.fetcher != nil {
		a.fetcher.CloseIdle()
	}
}
