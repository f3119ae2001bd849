package agent

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/petrel-crawler/petrel/internal/crawllog"
	"github.com/petrel-crawler/petrel/internal/fetch"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/store"
)

// CrawlLog returns the crawl's line logs: the console follows crawl.log
// with its Subscribe.
func (a *Agent) CrawlLog() *crawllog.Log { return a.crawlLog }

// failureStatus is the crawl.log code of a fetch that got no response.
func failureStatus(kind fetch.ErrorKind) int {
	switch kind {
	case fetch.ErrDNS:
		return crawllog.StatusDNSFailed
	case fetch.ErrRefused:
		return crawllog.StatusConnectFailed
	case fetch.ErrTimeout:
		return crawllog.StatusTimeout
	case fetch.ErrReset, fetch.ErrProtocol, fetch.ErrTooLargeHeader:
		return crawllog.StatusConnectBroken
	case fetch.ErrForbidden:
		return crawllog.StatusBlockedByUser
	}
	return crawllog.StatusOtherFailure
}

// taskEntry fills the fields of a crawl.log line that come from the task.
func (a *Agent) taskEntry(t *frontier.Task, fetcher int) crawllog.Entry {
	e := crawllog.Entry{URL: t.URL(), Fetcher: fetcher, Size: -1}
	if t.Robots {
		e.HopPath = "P" // a prerequisite of its host's URLs
	} else {
		e.HopPath = t.Meta.Path.String()
		e.Via = a.vias.name(t.Meta.Via)
		e.Seed = a.seedName(t.Meta)
	}
	if t.Attempt > 0 {
		e.Annotations = append(e.Annotations, strconv.Itoa(t.Attempt+1)+"t")
	}
	return e
}

// seedName returns the seed a URL descends from ("" when not known).
func (a *Agent) seedName(m frontier.Meta) string {
	if m.Seed == 0 || int(m.Seed) > len(a.seedURLs) {
		return ""
	}
	return a.seedURLs[m.Seed-1]
}

// viaNames maps the fingerprints of recently parsed pages (frontier.Meta's
// Via) back to their URLs for the crawl log's via field: a fixed table in
// which each fingerprint has two slots (its low and its high bits). A page
// takes its first slot when that is free or already its own, else its
// second, the last page written to a slot winning. A URL whose page was
// pushed out of both before its own fetch is logged without via ("-");
// skipped.jsonl always has the via, taken from the page itself.
type viaNames struct {
	slots [1 << 16]atomic.Pointer[viaName]
}

type viaName struct {
	fp  uint64
	url string
}

// add records the page url with fingerprint fp.
func (v *viaNames) add(fp uint64, url string) {
	first := &v.slots[fp%uint64(len(v.slots))]
	if n := first.Load(); n == nil || n.fp == fp {
		first.Store(&viaName{fp, url})
		return
	}
	v.slots[(fp>>32)%uint64(len(v.slots))].Store(&viaName{fp, url})
}

// name returns the URL of fingerprint fp, or "" when it is not held.
func (v *viaNames) name(fp uint64) string {
	if fp == 0 {
		return ""
	}
	for _, i := range [2]uint64{fp, fp >> 32} {
		if n := v.slots[i%uint64(len(v.slots))].Load(); n != nil && n.fp == fp {
			return n.url
		}
	}
	return ""
}

// logFailure writes the crawl.log line of a fetch that got no response.
func (a *Agent) logFailure(t *frontier.Task, fetcher int, kind fetch.ErrorKind, start time.Time, resp *fetch.Response) {
	if a.crawlLog.Off() {
		return
	}
	e := a.taskEntry(t, fetcher)
	e.Status = failureStatus(kind)
	e.NoResponse = true
	e.Start = start
	e.Duration = time.Since(start)
	if resp != nil && !resp.End.IsZero() {
		e.Start, e.Duration = resp.Start, resp.End.Sub(resp.Start)
	}
	e.Annotations = append(e.Annotations, "err:"+kind.String())
	a.crawlLog.Fetch(&e)
}

// logResponse writes the crawl.log line of a response, with the WARC
// record it went to (res, when stored) and the page's languages (langs,
// when detected: a lang: annotation after the others).
func (a *Agent) logResponse(t *frontier.Task, fetcher int, resp *fetch.Response, res *store.Result, notStored, langs string) {
	if a.crawlLog.Off() {
		return
	}
	e := a.taskEntry(t, fetcher)
	e.URL = resp.URL // a robots.txt redirect hop's own URL
	e.Status = resp.Status
	e.Size = int64(len(resp.Body))
	e.MIME = resp.Header.Get("Content-Type")
	e.Start, e.Duration = resp.Start, resp.End.Sub(resp.Start)
	if resp.Truncated != "" {
		e.Annotations = append(e.Annotations, resp.Truncated+"Trunc")
	}
	if resp.TLS != nil {
		e.Annotations = append(e.Annotations, tlsAnnotation(resp.TLS))
	}
	switch {
	case res != nil:
		e.Digest = res.PayloadDigest
		switch {
		case res.NotModified:
			e.Annotations = append(e.Annotations, "revisit:not-modified")
		case res.Prior:
			e.Annotations = append(e.Annotations, "duplicate:dedup-index")
		case res.Revisit:
			e.Annotations = append(e.Annotations, "duplicate:digest")
		}
		e.Annotations = append(e.Annotations, "warc:"+res.File+"@"+strconv.FormatInt(res.Offset, 10))
	case notStored != "":
		e.Annotations = append(e.Annotations, notStored)
	}
	if langs != "" {
		e.Annotations = append(e.Annotations, crawllog.Languages(langs))
	}
	a.crawlLog.Fetch(&e)
}

// refuse logs a URL refused for reason (rule: the rule's text, when there
// is one) to crawl.log and skipped.jsonl. The caller counts it.
func (a *Agent) refuse(url, via string, m frontier.Meta, reason crawllog.Reason, rule string) {
	a.noteSeedRefused(url, m, reason, rule) // seedfailures.go
	if a.crawlLog.Off() {
		return
	}
	e := crawllog.Entry{Seed: a.seedName(m), HopPath: m.Path.String()}
	a.crawlLog.Refuse(&e, &crawllog.Skip{URL: url, Via: via, Reason: reason, Rule: rule})
}

// dropped logs a URL the frontier gave up (it counted it) to crawl.log and
// skipped.jsonl: the URLs of a purged, unreachable or blocklisted host, of
// a dead name or a refused address, of an authority whose robots.txt never
// came, those whose tries were used up, and those over their key's budget.
// Those given up after failures go to state/failed too, for --retry-failed.
func (a *Agent) dropped(url string, m frontier.Meta, why frontier.DropReason) {
	a.revisitDropped(url, m) // revisits.go
	switch why {
	case frontier.DropHostDown, frontier.DropBrokenHost, frontier.DropRetries, frontier.DropRobotsUnavailable, frontier.DropDNS:
		a.failed.add(why.String(), url, m) // failedlog.go
	}
	reason, rule := crawllog.ReasonBrokenHost, ""
	switch why {
	case frontier.DropRobotsUnavailable:
		reason, rule = crawllog.ReasonRobotsFailed, url[:len(url)-len(urlPathQuery(url))]+"/robots.txt"
	case frontier.DropDNS:
		reason = crawllog.ReasonDNS
	case frontier.DropAddress:
		reason = crawllog.ReasonAddress
	case frontier.DropBlocked:
		reason = crawllog.ReasonBlocklist
	case frontier.DropOverBudget:
		reason, rule = crawllog.ReasonOverBudget, "--max-urls-per-host "+strconv.FormatInt(a.frontier.Settings().MaxURLsPerKey, 10)
	case frontier.DropHostDown:
		reason, rule = crawllog.ReasonHostDown, "--host-down-give-up "+a.frontier.Settings().HostDownGiveUp.String()
	case frontier.DropRetries:
		reason = crawllog.ReasonRetries
	}
	a.refuse(url, a.vias.name(m.Via), m, reason, rule)
}

// tlsAnnotation is the crawl log's note on an https response's certificate:
// tls:verified, tls:off, or tls:unverified: and the kind of failure
// (unknown-authority, hostname, expired or invalid; the WARC record's
// Petrel-TLS-Verify and the event log have the whole error).
func tlsAnnotation(ts *fetch.TLSState) string {
	switch e := ts.VerifyError; {
	case ts.Verified:
		return "tls:verified"
	case e == "":
		return "tls:off"
	case strings.Contains(e, "unknown authority"):
		return "tls:unverified:unknown-authority"
	case strings.Contains(e, "valid for"):
		return "tls:unverified:hostname"
	case strings.Contains(e, "expired") || strings.Contains(e, "not yet valid"):
		return "tls:unverified:expired"
	}
	return "tls:unverified:invalid"
}

// urlPathQuery returns the path and query of an absolute URL ("" when it
// has none).
func urlPathQuery(url string) string {
	if i := strings.Index(url, "://"); i >= 0 {
		if j := strings.IndexByte(url[i+3:], '/'); j >= 0 {
			return url[i+3+j:]
		}
	}
	return ""
}
