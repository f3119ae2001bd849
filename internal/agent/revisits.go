package agent

// Revisits (--revisit): the schedule of a revisit crawl (internal/revisit)
// wired into the run. Every page fetched with a 200 is scheduled; the
// schedule's issuer hands due URLs to the frontier as ready records with
// the revisit hop (V); a fetcher claims a revisit task before fetching it
// (a duplicate for a due time done is finished unfetched) and sends the
// last capture's validators; the parser stores a 304 as a
// server-not-modified revisit record of that capture and tells the
// schedule what the visit found.

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/petrel-crawler/petrel/internal/console"
	"github.com/petrel-crawler/petrel/internal/fetch"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/parse"
	"github.com/petrel-crawler/petrel/internal/revisit"
	"github.com/petrel-crawler/petrel/internal/stats"
	"github.com/petrel-crawler/petrel/internal/store"
)

// openRevisits opens the schedule of a --revisit crawl, once the frontier
// is open and the WARC files are whole (the schedule commits from them
// the revisits stored before the last process died), before any fetch;
// recovering says the last process died.
func (a *Agent) openRevisits(cfg *Config, recovering bool) error {
	if !cfg.Revisit.On {
		return nil
	}
	s, err := revisit.Open(revisit.Config{Dir: filepath.Join(cfg.Dir, "state", "revisit"), Settings: cfg.Revisit,
		Issue: a.issueRevisit, Reissue: recovering, WARCDir: filepath.Join(cfg.Dir, "warc"), Logger: a.log}) // clusterrevisits.go
	if err != nil {
		return err
	}
	a.revisits = s
	return nil
}

// flushForCheckpoint flushes the sieve before a checkpoint and makes the
// revisit schedule durable: the schedule keeps its own state, which is
// not rolled back with the frontier's (see internal/revisit).
func (a *Agent) flushForCheckpoint() error {
	if err := a.sieve.Flush(); err != nil {
		return fmt.Errorf("sieve: %w", err)
	}
	if a.revisits != nil {
		if err := a.forgetMovedRevisits(); err != nil { // clusterrevisits.go
			return fmt.Errorf("revisit: moved entries: %w", err)
		}
		return a.revisits.Sync()
	}
	return nil
}

// startRevisits starts the schedule's issuer and, for one agent with
// --max-urls, the end at that limit; the function returned stops them and
// waits for their end.
func (a *Agent) startRevisits(ctx context.Context) (stop func()) {
	if a.revisits == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := a.revisits.Run(ctx); err != nil {
			a.log.Error("revisit schedule", "err", err)
			a.storeFailed(err) // the schedule is state: the run ends, as on a store failure
		}
	}()
	atLimit := make(chan struct{})
	go func() {
		defer close(atLimit)
		if a.router == nil && a.cfg.Frontier.MaxURLs > 0 {
			a.endRevisitsAtLimit(ctx)
		}
	}()
	return func() {
		cancel()
		<-done
		<-atLimit
	}
}

// endRevisitsAtLimit ends a revisit crawl of one agent once --max-urls
// page fetches are done and nothing is in flight (closing the frontier's
// Until), as a crawl without --revisit ends there; it returns then, or
// when ctx ends. In a cluster the crawl's end is the cluster's.
func (a *Agent) endRevisitsAtLimit(ctx context.Context) {
	for {
		settled := a.frontier.Settled()
		if a.frontier.AtLimit() && a.frontier.Idle() {
			a.log.Info("revisit crawl: --max-urls page fetches done: the crawl ends")
			close(a.until)
			return
		}
		select {
		case <-settled:
		case <-ctx.Done():
			return
		}
	}
}

// isRevisit reports whether t is a revisit task of the schedule.
func isRevisit(t *frontier.Task) bool {
	return !t.Robots && t.Meta.Path.Last() == frontier.HopRevisit
}

// claimRevisit is called before t is fetched. For a revisit task it claims
// the URL and adds the last capture's validators to req; it returns the
// URL's state (nil for any other task), and false when the task is a
// duplicate of a due time done, not to be fetched.
func (a *Agent) claimRevisit(t *frontier.Task, req *fetch.Request) (*revisit.State, bool) {
	if a.revisits == nil || !isRevisit(t) {
		return nil, true
	}
	st, ok := a.revisits.Claim(t.URL())
	if !ok {
		return nil, false
	}
	if st.RecordID != ([16]byte{}) { // a 304 needs a full capture to refer to
		req.IfNoneMatch = st.ETag
		if st.LastModified != 0 {
			req.IfModifiedSince = time.Unix(st.LastModified, 0).UTC().Format(http.TimeFormat)
		}
	}
	return &st, true
}

// unclaimRevisit lets go of the claim of a fetch that did not happen (its
// task goes back to the frontier), or, failed, schedules the URL again.
func (a *Agent) unclaimRevisit(t *frontier.Task, st *revisit.State, failed bool) {
	if st == nil {
		return
	}
	if !failed {
		a.revisits.Unclaim(t.URL())
		return
	}
	if err := a.revisits.Failed(t.URL()); err != nil {
		a.log.Error("revisit schedule", "url", t.URL(), "err", err)
	}
}

// revisitDropped schedules again a revisit the frontier gave up (its host
// down, robots.txt now forbidding it, its key over budget).
func (a *Agent) revisitDropped(url string, m frontier.Meta) {
	if a.revisits != nil && m.Path.Last() == frontier.HopRevisit {
		if err := a.revisits.Failed(url); err != nil {
			a.log.Error("revisit schedule", "url", url, "err", err)
		}
	}
}

// notModifiedOf returns the capture a 304 answer to r confirms, or nil.
func notModifiedOf(r *fetched) *store.Original {
	st := r.revisit
	if st == nil || r.resp.Status != http.StatusNotModified || st.RecordID == ([16]byte{}) {
		return nil
	}
	return &store.Original{URI: r.resp.URL, Date: time.Unix(0, st.RecordDate), RecordID: revisit.RecordIDString(st.RecordID)}
}

// visitedRevisit tells the schedule what the fetch of r found, once
// stored as res: a first visit of a page (a 200) schedules it, a revisit
// schedules it again.
func (a *Agent) visitedRevisit(r *fetched, res store.Result, err error) {
	if a.revisits == nil || r.task.Robots || (r.revisit == nil && r.resp.Status != http.StatusOK) {
		return
	}
	if err != nil {
		a.unclaimRevisit(r.task, r.revisit, true)
		return
	}
	resp := r.resp
	v := revisit.Visit{Time: resp.Start, Status: resp.Status, ETag: resp.Header.Get("ETag"),
		Full: !res.Revisit, Bytes: int64(len(resp.RawResponse))}
	if lm, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		v.LastModified = lm
	}
	v.Digest, v.RecordID = revisit.ParseDigest(res.PayloadDigest), revisit.ParseRecordID(res.RecordID)
	var meta [frontier.MetaLen]byte
	r.task.Meta.Append(meta[:0])
	var serr error
	if r.revisit == nil { // a first fetch: committed with others
		serr = a.revisits.Scheduled(r.task.URL(), meta[:], v)
	} else {
		_, serr = a.revisits.Visited(r.task.URL(), meta[:], v)
	}
	if serr != nil {
		a.log.Error("revisit schedule", "url", r.task.URL(), "err", serr)
		a.storeFailed(serr)
	}
}

// hintRevisits gives the revisit schedule what a sitemap says of its
// pages (changefreq, lastmod), before they are offered.
func (a *Agent) hintRevisits(res parse.SitemapResult) {
	if a.revisits == nil || res.Hints == nil {
		return
	}
	hs := make([]revisit.Hinted, 0, len(res.Hints))
	for i, h := range res.Hints {
		if (h != parse.SitemapHint{}) {
			hs = append(hs, revisit.Hinted{URL: res.URLs[i].String(), Hint: revisit.Hint{Period: h.Period, LastMod: h.LastMod}})
		}
	}
	if err := a.revisits.Hints(hs); err != nil {
		a.log.Error("revisit schedule", "err", err)
		a.storeFailed(err)
	}
}

// whyRevisit adds to w what the revisit schedule holds of its URL.
func (a *Agent) whyRevisit(w *console.Why) {
	if a.revisits == nil {
		return
	}
	st, ok, err := a.revisits.Lookup(w.URL)
	switch {
	case err != nil:
		w.Caveats = append(w.Caveats, "the revisit schedule could not be read: "+err.Error())
		return
	case !ok:
		w.Add("revisit", "not scheduled (only pages fetched with a 200 are)")
		return
	}
	if st.Issued {
		w.Add("revisit", "due since "+time.Unix(0, st.Due).UTC().Format(time.RFC3339Nano)+": handed to the frontier, not yet fetched again")
	} else {
		w.Add("revisit due", time.Unix(0, st.Due))
	}
	w.Add("revisit interval", time.Duration(st.Interval).String()+" (policy "+a.cfg.Revisit.Policy+")")
	hist := fmt.Sprintf("%d revisits, %d found it changed (%d with a Last-Modified time), known unchanged for %v", st.Visits, st.Changes, st.Timed, time.Duration(st.Exposure).Round(time.Millisecond))
	if st.LMWrong {
		hist += "; its Last-Modified moved while its payload did not: not used to time changes"
	}
	w.Add("revisit history", hist)
	if r := st.Rate(0); r > 0 {
		w.Add("estimated change rate", fmt.Sprintf("one change every %v", time.Duration(1e9/r).Round(time.Millisecond)))
	}
	if st.ETag != "" || st.LastModified != 0 {
		w.Add("validators", fmt.Sprintf("ETag %q, Last-Modified %d (sent as If-None-Match / If-Modified-Since)", st.ETag, st.LastModified))
	}
}

// Revisits returns the schedule's figures for the console; false when
// the crawl is not a revisit crawl.
func (a *Agent) Revisits() (revisit.Figures, bool) {
	if a.revisits == nil {
		return revisit.Figures{}, false
	}
	return a.revisits.Figures(), true
}

// revisitSummary is the end summary's line on the revisit schedule.
func revisitSummary(f revisit.Figures) string {
	return fmt.Sprintf("\n  revisits           %d done this run (304 not modified %d, unchanged 200 %d; %s spared by the 304s), %d duplicate tasks not fetched; schedule: %d URLs, %d issued, %d due now, %d due within the hour, estimated freshness %.3f",
		f.Revisits, f.NotModified, f.Unchanged, stats.Human(float64(f.BytesSaved)), f.Skipped, f.Scheduled, f.Issued, f.Due, f.DueHour, f.Freshness)
}

// revisitProgress is the progress line's part on the revisit schedule.
func revisitProgress(f revisit.Figures) string {
	share := 0.0
	if f.Revisits > 0 {
		share = float64(f.NotModified) / float64(f.Revisits)
	}
	return fmt.Sprintf(" | revisits %d (304 %.0f%%), due %d, fresh~%.2f", f.Revisits, 100*share, f.Due, f.Freshness)
}
