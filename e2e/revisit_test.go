package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	gowarc "github.com/nlnwa/gowarc/v3"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// revisitRun runs petrel crawl --revisit on r with args for about d, then
// stops it (SIGINT) or, with kill, kills it (SIGKILL), and returns its
// stderr.
func (r *crawlRun) revisitRun(t *testing.T, d time.Duration, kill bool, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
	defer cancel()
	all := append([]string{"crawl", "--dir", r.dir, "--hosts", r.hosts, "--seeds", r.seeds, "--allow-private",
		"--system-dns=false", "--progress", "0", "--revisit"}, args...)
	cmd := exec.CommandContext(ctx, petrel, all...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(d)
	if kill {
		cmd.Process.Kill()
		cmd.Wait()
		return stderr.String()
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("revisit crawl: %v\n%s", err, stderr.String())
	}
	return stderr.String()
}

// changingPages returns the keys of the changing pages of the web that a
// crawl fetches, and the validators each one's host sends.
func changingPages(t *testing.T, w *testweb.Web) map[string]testweb.Validators {
	pages := map[string]testweb.Validators{}
	for _, u := range w.Expected() {
		if w.ChangePeriod(u) > 0 {
			k := urlKey(t, u)
			pages[k] = w.HostValidators(strings.Fields(k)[0])
		}
	}
	return pages
}

// TestRevisitConditional: a revisit crawl of the changing web fetches
// every page again (at least once in 6 s, the longest interval 1 s); once a
// page has a full capture (a response record), every later request of it
// to a host that sends ETag and Last-Modified is conditional, and none to
// a host that sends neither; no politeness delay is cut short (judged on
// the web's log); every 304 is stored as a server-not-modified revisit
// record that refers to a response record of the same URL in the WARC
// files (its record ID, URI and date), read back with gowarc; the run's
// summary and crawl.log count the 304s; while it runs, why names a page's
// next due time, interval and validators, and /metrics the schedule.
func TestRevisitConditional(t *testing.T) {
	const hostDelay, ipDelay = 30 * time.Millisecond, 10 * time.Millisecond
	r := startWeb(t, testweb.Config{Hosts: 8, HostsPerIP: 2, PagesPerHost: 8, Seed: 13, ChangeDay: 20 * time.Second,
		FirstIP: netip.MustParseAddr("127.72.0.1")})
	c := startConsoleCrawl(t, r, "--revisit", "--host-delay", hostDelay.String(), "--ip-delay", ipDelay.String(),
		"--revisit-min", "100ms", "--revisit-max", "1s", "--revisit-policy", "heritrix")
	time.Sleep(6 * time.Second)
	checkRevisitConsole(t, c, r.web)
	if err := c.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := c.wait(t, time.Minute); err != nil {
		t.Fatalf("revisit crawl: %v\n%s", err, c.log())
	}
	stderr := c.log()
	hits := r.web.Hits()
	checkPoliteness(t, r.dir, hits, hostDelay, ipDelay)

	// The WARC files: each page's first full capture, and the 304s.
	type capture struct{ uri, date string }
	responses := map[string]capture{}
	firstFull := map[string]time.Time{}
	var refs []map[string]string
	eachWARCRecord(t, r.dir+"/warc", func(f string, rec gowarc.Record) {
		for _, v := range rec.Validation {
			t.Errorf("%s offset %d: %v", f, rec.Offset, v)
		}
		h := rec.WarcRecord.WarcHeader()
		switch rec.WarcRecord.Type() {
		case gowarc.Response:
			uri, date := h.Get(gowarc.WarcTargetURI), h.Get(gowarc.WarcDate)
			responses[h.Get(gowarc.WarcRecordID)] = capture{uri, date}
			d, err := time.Parse(time.RFC3339Nano, date)
			if k := urlKey(t, uri); err == nil && (firstFull[k].IsZero() || d.Before(firstFull[k])) {
				firstFull[k] = d
			}
		case gowarc.Revisit:
			if h.Get(gowarc.WarcProfile) == gowarc.ProfileServerNotModifiedV1_1 {
				refs = append(refs, map[string]string{"to": h.Get(gowarc.WarcRefersTo), "uri": h.Get(gowarc.WarcRefersToTargetURI),
					"date": h.Get(gowarc.WarcRefersToDate), "target": h.Get(gowarc.WarcTargetURI), "payload": h.Get(gowarc.WarcPayloadDigest)})
			}
		}
	})

	pages := changingPages(t, r.web)
	fetches, notModified := map[string]int{}, 0
	afterFull := map[string][]bool{} // per page, Conditional of each request after its first full capture began
	for _, h := range hits {
		k := key(h.Host, h.Path)
		if _, ok := pages[k]; !ok {
			continue
		}
		fetches[k]++
		if f := firstFull[k]; !f.IsZero() && !h.Start.Before(f) {
			afterFull[k] = append(afterFull[k], h.Conditional)
		}
		if h.Status == 304 {
			notModified++
		}
	}
	for k, kind := range pages {
		later := afterFull[k]
		if len(later) > 0 {
			later = later[1:] // the full capture itself
		}
		conditional := 0
		for _, c := range later {
			if c {
				conditional++
			}
		}
		switch {
		case fetches[k] < 2:
			t.Errorf("%s fetched %d times in a revisit crawl of 6 s (max interval 1 s)", k, fetches[k])
		case kind == testweb.ValidatorsBoth && conditional != len(later):
			t.Errorf("%s (validators %v): %d of the %d requests after its first full capture conditional", k, kind, conditional, len(later))
		case kind == testweb.ValidatorsNone && conditional != 0:
			t.Errorf("%s: %d conditional requests to a host that sends no validators", k, conditional)
		}
	}
	if notModified == 0 {
		t.Fatal("no 304 in the web's log")
	}
	if !strings.Contains(stderr, fmt.Sprintf("(304 not modified %d,", notModified)) {
		t.Errorf("the summary does not count the %d 304s:\n%s", notModified, stderr)
	}
	if !strings.Contains(stderr, "spared by the 304s") || strings.Contains(stderr, "; 0 B spared") || !strings.Contains(stderr, "estimated freshness 0.") {
		t.Errorf("the summary does not give the bytes the 304s spared and the estimated freshness:\n%s", stderr)
	}
	if b, err := os.ReadFile(r.dir + "/logs/crawl.log"); err != nil || strings.Count(string(b), "revisit:not-modified") != notModified {
		t.Errorf("crawl.log marks %d 304s of %d (%v)", strings.Count(string(b), "revisit:not-modified"), notModified, err)
	}
	if len(refs) != notModified {
		t.Errorf("%d server-not-modified revisit records, the web answered %d 304s", len(refs), notModified)
	}
	for _, ref := range refs {
		c, ok := responses[ref["to"]]
		if !ok || c.uri != ref["uri"] || c.uri != ref["target"] || c.date != ref["date"] || ref["payload"] != "" {
			t.Errorf("revisit %v refers to %+v (found %v)", ref, c, ok)
		}
	}
	t.Logf("%d requests, %d 304s, %d server-not-modified records", len(hits), notModified, len(refs))
}

// checkRevisitConsole asks the running crawl of c why about a changing
// page of a host that sends validators and reads /metrics: the
// schedule's facts and figures are there.
func checkRevisitConsole(t *testing.T, c *consoleCrawl, w *testweb.Web) {
	t.Helper()
	var page string
	for _, s := range w.Expected() {
		if w.ChangePeriod(s) > 0 && w.HostValidators(strings.Fields(urlKey(t, s))[0]) == testweb.ValidatorsBoth {
			page = s
			break
		}
	}
	if page == "" {
		t.Fatal("no changing page of a host that sends both validators")
	}
	var wa whyAnswer
	if err := json.Unmarshal(c.must(t, "GET", "/api/v1/why?url="+url.QueryEscape(page), nil), &wa); err != nil {
		t.Fatal(err)
	}
	facts := map[string]string{}
	for _, f := range wa.Facts {
		facts[f.Name] = f.Value
	}
	if !strings.Contains(facts["revisit interval"], "policy heritrix") || !strings.Contains(facts["validators"], "ETag") ||
		facts["revisit due"] == "" && facts["revisit"] == "" {
		t.Errorf("why %s: %s", page, wa)
	}
	m := string(c.must(t, "GET", "/metrics", nil))
	for _, want := range []string{`petrel_revisit_urls{revisit_state="scheduled"}`, `petrel_revisits_total{outcome="not_modified"}`,
		"petrel_revisit_saved_bytes_total ", "petrel_revisit_estimated_freshness_ratio 0."} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestRevisitRestart stops a revisit crawl and kills another, restarting
// on the same directory each time: no due time is lost (every page is
// fetched again in each later run, longer than the longest interval) and
// none is done twice: no two WARC records of a page, and no two requests
// of it, are closer than the shortest interval, which a due time done
// twice would be. The one request that may be sent again is one the kill
// cut before its response was stored (no record of it): its due time was
// not done.
func TestRevisitRestart(t *testing.T) {
	const minI, maxI = 700 * time.Millisecond, 1500 * time.Millisecond
	const twice = minI - 50*time.Millisecond // two fetches closer than this are one due time done twice
	r := startWeb(t, testweb.Config{Hosts: 6, HostsPerIP: 2, PagesPerHost: 4, Seed: 17, ChangeDay: 30 * time.Second,
		FirstIP: netip.MustParseAddr("127.73.0.1")})
	// A host delay long enough for revisit tasks to wait in the frontier's
	// queues: its checkpoints hold some, and the kill leaves some issued.
	args := []string{"--host-delay", "60ms", "--ip-delay", "5ms", "--checkpoint-every", "300ms",
		"--revisit-min", minI.String(), "--revisit-max", maxI.String(), "--revisit-policy", "stormcrawler"}
	pages := changingPages(t, r.web)
	var bounds []time.Time
	for _, kill := range []bool{false, true, false} {
		r.revisitRun(t, 3500*time.Millisecond, kill, args...)
		bounds = append(bounds, time.Now())
	}
	hits := r.web.Hits()
	killed := bounds[1] // the second run ends with a kill -9

	records := map[string][]time.Time{} // per page, the WARC-Date of each response or revisit record
	eachWARCRecord(t, r.dir+"/warc", func(f string, rec gowarc.Record) {
		if typ := rec.WarcRecord.Type(); typ != gowarc.Response && typ != gowarc.Revisit {
			return
		}
		h := rec.WarcRecord.WarcHeader()
		k := urlKey(t, h.Get(gowarc.WarcTargetURI))
		if _, ok := pages[k]; !ok {
			return
		}
		d, err := time.Parse(time.RFC3339Nano, h.Get(gowarc.WarcDate))
		if err != nil {
			t.Fatalf("%s: WARC-Date: %v", f, err)
		}
		records[k] = append(records[k], d)
	})
	for k, ds := range records {
		slices.SortFunc(ds, time.Time.Compare)
		for i := 1; i < len(ds); i++ {
			if ds[i].Sub(ds[i-1]) < twice {
				t.Errorf("%s stored at %v and again %v later: a due time done twice", k, ds[i-1].Format("15:04:05.000000"), ds[i].Sub(ds[i-1]))
			}
		}
	}
	// stored says whether a request of page k at start has a record: its
	// WARC-Date is the crawler's start of the request, just before.
	stored := func(k string, start time.Time) bool {
		for _, d := range records[k] {
			if !d.After(start) && start.Sub(d) < 200*time.Millisecond {
				return true
			}
		}
		return false
	}

	last := map[string]time.Time{}
	cut := 0 // requests in flight at the kill, never stored, sent again
	perRun := make([]map[string]int, len(bounds))
	for i := range perRun {
		perRun[i] = map[string]int{}
	}
	for _, h := range hits {
		k := key(h.Host, h.Path)
		if _, ok := pages[k]; !ok {
			continue
		}
		if p, ok := last[k]; ok && h.Start.Sub(p) < twice {
			if p.Before(killed) && !h.Start.Before(killed) && killed.Sub(p) < time.Second && !stored(k, p) {
				cut++
				t.Logf("%s requested at %v, %v before the kill, not stored, and again %v later", k, p.Format("15:04:05.000"), killed.Sub(p), h.Start.Sub(p))
			} else {
				t.Errorf("%s requested at %v and again %v later: a due time done twice", k, p.Format("15:04:05.000"), h.Start.Sub(p))
			}
		}
		last[k] = h.Start
		for i, b := range bounds {
			if h.Start.Before(b) {
				perRun[i][k]++
				break
			}
		}
	}
	for i := 1; i < len(bounds); i++ {
		for k := range pages {
			if perRun[i][k] == 0 {
				t.Errorf("run %d: %s not fetched again: its due time was lost", i+1, k)
			}
		}
	}
	if b, err := os.ReadFile(r.dir + "/logs/events.jsonl"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "revisit claims of the last process settled") {
				t.Logf("at the restart after the kill: %s", l)
			}
		}
	}
	t.Logf("%d requests over three runs; %d requests cut by the kill before their record, sent again", len(hits), cut)
}
