package agent

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// The live settings TestReconfigureTiming changes, in its two steps (the
// others are TestReconfigureEveryLiveSetting's).
var (
	timingFirst = map[string]any{"delay-factor": 10, "crawl-delay-cap": "150ms", "retries": 3,
		"retry-delay": "150ms", "robots-expiry": "1s", "workbench-bytes": "1KiB"}
	timingSecond = map[string]any{"max-delay": "1s", "stop-grace": "400ms"} // and max-urls-per-host
)

// timingHit is one request a timingSite served.
type timingHit struct {
	host, path string
	status     int
	start, end time.Time
}

// timingSites are four hosts, each on its own address, that log every
// request:
//   - adapt.test answers each page in 30 ms (adaptive delays);
//   - cdelay.test's robots.txt says Crawl-delay: 5 (the cap decides);
//   - flaky.test answers 503 to every odd page (/f/N, N odd) and 200 to
//     the even ones, whose links keep failures from piling up in a row;
//   - hang.test's /wait answers when the client goes away (a fetch in
//     flight at the stop).
//
// Every page 200 links to ten new pages of its host.
type timingSites struct {
	urls  map[string]string // host → seed URL
	mu    sync.Mutex
	hits  []timingHit
	waits int       // /wait requests in flight
	left  time.Time // when the client of a /wait went away
}

func startTimingSites(t *testing.T, firstIP string, hostsFile string) *timingSites {
	ts := &timingSites{urls: map[string]string{}}
	f, err := os.OpenFile(hostsFile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i, host := range []string{"adapt.test", "cdelay.test", "flaky.test", "hang.test"} {
		ip := strings.TrimSuffix(firstIP, "1") + fmt.Sprint(i+1)
		ln, err := net.Listen("tcp", ip+":0")
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(f, ip, host)
		srv := &http.Server{Handler: ts.handler(host)}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		seed := "/p/0"
		if host == "flaky.test" {
			seed = "/f/0"
		}
		ts.urls[host] = fmt.Sprintf("http://%s:%d%s", host, ln.Addr().(*net.TCPAddr).Port, seed)
	}
	return ts
}

func (ts *timingSites) handler(host string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h := timingHit{host: host, path: r.URL.Path, status: 200, start: time.Now()}
		defer func() {
			h.end = time.Now()
			ts.mu.Lock()
			ts.hits = append(ts.hits, h)
			ts.mu.Unlock()
		}()
		var n int
		prefix := "/p/"
		switch {
		case r.URL.Path == "/robots.txt" && host == "cdelay.test":
			fmt.Fprint(w, "User-agent: *\nCrawl-delay: 5\n")
			return
		case r.URL.Path == "/robots.txt":
			h.status = 404
			http.NotFound(w, r)
			return
		case r.URL.Path == "/wait":
			ts.mu.Lock()
			ts.waits++
			ts.mu.Unlock()
			select {
			case <-r.Context().Done():
			case <-time.After(30 * time.Second):
			}
			ts.mu.Lock()
			ts.waits--
			ts.left = time.Now()
			ts.mu.Unlock()
			return
		case host == "flaky.test":
			fmt.Sscanf(r.URL.Path, "/f/%d", &n)
			prefix = "/f/"
			if n%2 == 1 {
				h.status = 503
				w.WriteHeader(503)
				return
			}
		case host == "adapt.test":
			time.Sleep(30 * time.Millisecond)
			fallthrough
		default:
			fmt.Sscanf(r.URL.Path, "/p/%d", &n)
		}
		w.Header().Set("Content-Type", "text/html")
		// Text of its own on every page (its number in words: the text
		// digest ignores digits), so that none is a duplicate, whose links
		// would not be followed.
		fmt.Fprintf(w, "<html><body><h1>%s page %s</h1>", host, inWords(n))
		if host == "hang.test" && n == 0 {
			fmt.Fprint(w, `<a href="/wait">w</a>`)
		}
		for k := 1; k <= 10; k++ {
			fmt.Fprintf(w, `<a href="%s%d">page %d</a>`, prefix, n*10+k, n*10+k)
		}
		fmt.Fprint(w, "</body></html>")
	}
}

// inWords spells n digit by digit ("one two" for 12).
func inWords(n int) string {
	names := strings.Fields("zero one two three four five six seven eight nine")
	var ws []string
	for _, d := range fmt.Sprint(n) {
		ws = append(ws, names[d-'0'])
	}
	return strings.Join(ws, " ")
}

// of returns the requests to host, in order of start.
func (ts *timingSites) of(host string) []timingHit {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var out []timingHit
	for _, h := range ts.hits {
		if h.host == host {
			out = append(out, h)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start.Before(out[j].start) })
	return out
}

// gaps are the gaps between the end of one request to host and the start
// of the next, for the pairs whose first request ended after from and
// whose second began before to.
func (ts *timingSites) gaps(host string, from, to time.Time) []time.Duration {
	hs := ts.of(host)
	var out []time.Duration
	for i := 1; i < len(hs); i++ {
		if hs[i-1].end.After(from) && hs[i].start.Before(to) {
			out = append(out, hs[i].start.Sub(hs[i-1].end))
		}
	}
	return out
}

// attempts maps each path of host to the starts and ends of its requests.
func (ts *timingSites) attempts(host string) map[string][]timingHit {
	out := map[string][]timingHit{}
	for _, h := range ts.of(host) {
		out[h.path] = append(out[h.path], h)
	}
	return out
}

// maxPages is the most distinct pages any host served.
func (ts *timingSites) maxPages() (int, string) {
	best, name := 0, ""
	for host := range ts.urls {
		n := 0
		for p := range ts.attempts(host) {
			if p != "/robots.txt" {
				n++
			}
		}
		if n > best {
			best, name = n, host
		}
	}
	return best, name
}

// TestReconfigureTiming changes, in the middle of a crawl, the live
// settings that decide when requests are made, and observes each one's
// effect in the servers' request log (and the workbench in its gauge):
// the adaptive delay (delay-factor, then max-delay lifting its cap), the
// Crawl-delay cap, the count and spacing of retries, robots.txt asked again
// once robots-expiry is lowered, pages per host stopping at a lowered
// max-urls-per-host, the workbench virtualizing once its budget is
// lowered, and a stop waiting the new stop-grace for a fetch in flight.
func TestReconfigureTiming(t *testing.T) {
	dir := t.TempDir()
	hostsFile := filepath.Join(dir, "hosts")
	if err := os.WriteFile(hostsFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startTimingSites(t, "127.86.0.1", hostsFile)
	cfg := Defaults()
	cfg.Dir = filepath.Join(dir, "crawl")
	cfg.Fetch.HostsFile = hostsFile
	for _, u := range ts.urls {
		cfg.SeedURLs = append(cfg.SeedURLs, u)
	}
	cfg.Fetch.AllowPrivate, cfg.Fetch.SystemDNS, cfg.Fetch.Timeout = true, false, time.Minute
	cfg.Frontier.HostDelay, cfg.Frontier.IPDelay = time.Millisecond, 0
	cfg.Frontier.DelayFactor, cfg.Frontier.MaxDelay, cfg.Frontier.CrawlDelayCap = 0, 60*time.Millisecond, 30*time.Millisecond
	cfg.Frontier.MaxRetries, cfg.Frontier.RetryDelay = 1, 20*time.Millisecond
	cfg.StopGrace, cfg.Fetchers, cfg.Parsers, cfg.Progress, cfg.CheckpointEvery = 20*time.Second, 8, 2, time.Hour, 0
	cfg.Frontier.WorkbenchBytes, cfg.Sieve.URLCacheBytes, cfg.Sieve.BufferKeys = 16<<20, 1<<20, 1<<12
	a, err := Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	runCtx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	runErr := make(chan error, 1)
	go func() { runErr <- a.Run(runCtx) }()
	ended := false
	t.Cleanup(func() { // a failed test stops the crawl before its directory goes
		if !ended {
			stop()
			<-runErr
		}
	})

	// The workbench gauge, sampled (it is updated every 100ms).
	var virtMu sync.Mutex
	type sample struct {
		at time.Time
		n  int64
	}
	var virt []sample
	sampling, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for sampling.Err() == nil {
			virtMu.Lock()
			virt = append(virt, sample{time.Now(), a.stats.Virtualized.Load()})
			virtMu.Unlock()
			time.Sleep(10 * time.Millisecond)
		}
	}()
	// await waits (bounded) until cond holds; cond says what it waits
	// for, for the failure.
	await := func(cond func() (bool, string)) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			ok, what := cond()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 10s, still waiting for %s", what)
			}
		}
	}
	const slack = 50 * time.Millisecond // a fetch begun before Reconfigure returned reaches the server a little later
	start := time.Now()
	await(func() (bool, string) {
		twice := 0
		for p, hs := range ts.attempts("flaky.test") {
			if strings.HasPrefix(p, "/f/") && len(hs) == 2 {
				twice++
			}
		}
		// The gaps the changes will lengthen, seen short first (a loaded
		// machine may take a while to show one).
		ga, gc := ts.gaps("adapt.test", start, time.Now()), ts.gaps("cdelay.test", start, time.Now())
		short := someBelow(ga, 55*time.Millisecond) && someBelow(gc, 140*time.Millisecond) && shortRetry(ts, time.Now())
		return twice >= 2 && len(ga) >= 4 && len(gc) >= 3 && short,
			fmt.Sprintf("2 pages of flaky.test tried twice (%d), 4 gaps on adapt.test (%d), 3 on cdelay.test (%d), short gaps on each (%v)", twice, len(ga), len(gc), short)
	})

	// Before t0 the old settings were in force; from t1 the new ones are.
	// In between, the frontier may already act on them: a robots.txt
	// fetched over a second ago expires with the change, and its host's
	// next request (30ms pages) can ask for it again before Reconfigure has
	// returned.
	t0 := time.Now()
	if _, err := a.Reconfigure(ctx, timingFirst); err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	await(func() (bool, string) {
		most := 0 // requests of an odd page of flaky.test first asked after the change
		for _, hs := range ts.attempts("flaky.test") {
			if hs[0].status == 503 && hs[0].start.After(t1.Add(slack)) {
				most = max(most, len(hs))
			}
		}
		robots := 0
		for _, h := range ts.of("cdelay.test") {
			if h.path == "/robots.txt" && h.start.After(t1) {
				robots++
			}
		}
		na, nc := len(ts.gaps("adapt.test", t1, time.Now())), len(ts.gaps("cdelay.test", t1.Add(slack), time.Now()))
		capped := someBelow(pageGaps(ts, "adapt.test", t1, time.Now()), 280*time.Millisecond)
		return most >= 4 && robots > 0 && na >= 4 && nc >= 3 && capped,
			fmt.Sprintf("4 tries of a page of flaky.test (%d), cdelay.test's robots.txt again (%d), 4 gaps on adapt.test (%d), one under 280ms (%v), 3 on cdelay.test (%d)", most, robots, na, capped, nc)
	})

	most, _ := ts.maxPages()
	budget := most + 3
	second := map[string]any{"max-urls-per-host": budget}
	for k, v := range timingSecond {
		second[k] = v
	}
	if _, err := a.Reconfigure(ctx, second); err != nil {
		t.Fatal(err)
	}
	t2 := time.Now()
	await(func() (bool, string) {
		n, _ := ts.maxPages()
		ts.mu.Lock()
		waiting := ts.waits
		ts.mu.Unlock()
		na := len(ts.gaps("adapt.test", t2, time.Now()))
		return n >= budget && na >= 2 && waiting == 1,
			fmt.Sprintf("a host at max-urls-per-host %d (%d), 2 gaps on adapt.test (%d), hang.test's /wait in flight (%d)", budget, n, na, waiting)
	})
	time.Sleep(200 * time.Millisecond) // a host at its budget asks for nothing more
	stopped := time.Now()
	stop()
	err = <-runErr
	ended = true
	if err != nil {
		t.Fatal(err)
	}
	returned := time.Now()
	stopSampling()
	<-sampled

	// delay-factor and max-delay: adapt.test answers in 30ms.
	if !someBelow(ts.gaps("adapt.test", start, t1), 55*time.Millisecond) {
		t.Errorf("adapt.test: no gap under 55ms before delay-factor 10: %v", ts.gaps("adapt.test", start, t1))
	}
	capped := pageGaps(ts, "adapt.test", t1, t2)
	for _, g := range capped {
		if g < 60*time.Millisecond-time.Millisecond {
			t.Errorf("adapt.test: gap %v after delay-factor 10 (max-delay 60ms)", g)
		}
	}
	for _, h := range pairs(ts.of("adapt.test"), t2) {
		if prev := h[0]; prev.path != "/robots.txt" && prev.end.After(t2) {
			if g, want := h[1].start.Sub(prev.end), min(10*prev.end.Sub(prev.start), time.Second); g < want-time.Millisecond {
				t.Errorf("adapt.test: gap %v after max-delay 1s, want 10 × the %v the page took", g, prev.end.Sub(prev.start))
			}
		}
	}
	if !someBelow(capped, 280*time.Millisecond) {
		t.Errorf("adapt.test: no gap under 280ms while max-delay 60ms capped the adaptive delay: %v", capped)
	}

	// crawl-delay-cap: cdelay.test asks for 5s.
	before := ts.gaps("cdelay.test", start, t1)
	for _, g := range before {
		if g < 30*time.Millisecond-time.Millisecond {
			t.Errorf("cdelay.test: gap %v under the Crawl-delay cap of 30ms", g)
		}
	}
	if !someBelow(before, 140*time.Millisecond) {
		t.Errorf("cdelay.test: no gap under 140ms before crawl-delay-cap 150ms: %v", before)
	}
	for _, h := range pairs(ts.of("cdelay.test"), t1.Add(slack)) {
		if g := h[1].start.Sub(h[0].end); g < 150*time.Millisecond-time.Millisecond {
			t.Errorf("cdelay.test: gap %v after crawl-delay-cap 150ms", g)
		}
	}

	// robots-expiry: lowered from 24h to 1s.
	for _, host := range []string{"cdelay.test", "adapt.test"} {
		var robots []timingHit
		for _, h := range ts.of(host) {
			if h.path == "/robots.txt" {
				robots = append(robots, h)
				continue
			}
			if len(robots) > 0 && h.start.After(t1.Add(slack)) {
				if age := h.start.Sub(robots[len(robots)-1].end); age > time.Second+300*time.Millisecond {
					t.Errorf("%s%s asked %v after its robots.txt, robots-expiry 1s", host, h.path, age)
				}
			}
		}
		n := 0
		for i, r := range robots {
			if r.start.Before(t0) {
				n++
			}
			if i > 0 && r.start.Sub(robots[i-1].end) < time.Second-time.Millisecond {
				t.Errorf("%s: robots.txt asked again %v after the last, robots-expiry 1s", host, r.start.Sub(robots[i-1].end))
			}
		}
		if n != 1 || len(robots) < 2 {
			t.Errorf("%s: robots.txt asked %d times before robots-expiry 1s (want 1), %d in all (want more)", host, n, len(robots))
		}
	}

	// retries and retry-delay: every odd page of flaky.test answers 503.
	var twice, fourTimes int
	for p, hs := range ts.attempts("flaky.test") {
		if hs[0].status != 503 {
			continue
		}
		switch {
		case hs[len(hs)-1].end.Before(t1):
			if len(hs) != 2 {
				t.Errorf("flaky.test%s: %d requests before retries 3, want 2 (retries 1)", p, len(hs))
			}
			twice++
			if g := hs[1].start.Sub(hs[0].end); g < 20*time.Millisecond-time.Millisecond {
				t.Errorf("flaky.test%s: retried %v after the 503, retry-delay 20ms", p, g)
			}
		case hs[0].start.After(t1.Add(slack)):
			// Three retries, each at most max-delay and retry-delay
			// after the one before, fit in 3.5s.
			if len(hs) > 4 || (len(hs) < 4 && hs[0].start.Before(stopped.Add(-3500*time.Millisecond))) {
				t.Errorf("flaky.test%s: %d requests after retries 3, want 4", p, len(hs))
			}
			if len(hs) == 4 {
				fourTimes++
			}
			for i := 1; i < len(hs); i++ {
				if g := hs[i].start.Sub(hs[i-1].end); g < 150*time.Millisecond-time.Millisecond {
					t.Errorf("flaky.test%s: retried %v after the 503, retry-delay 150ms", p, g)
				}
			}
		}
	}
	if twice == 0 || fourTimes == 0 {
		t.Errorf("flaky.test: %d pages tried twice before the change, %d four times after", twice, fourTimes)
	}
	if !shortRetry(ts, t1) {
		t.Error("flaky.test: no retry under 140ms before retry-delay 150ms")
	}

	// max-urls-per-host: lowered to the most pages a host had, plus 3.
	if n, host := ts.maxPages(); n != budget {
		t.Errorf("%s: %d pages, max-urls-per-host became %d", host, n, budget)
	}

	// workbench-bytes: nothing virtualized under 16MiB, some under 1KiB.
	virtMu.Lock()
	var virtBefore, virtAfter int64
	for _, s := range virt {
		if s.at.Before(t1) {
			virtBefore = max(virtBefore, s.n)
		} else {
			virtAfter = max(virtAfter, s.n)
		}
	}
	virtMu.Unlock()
	if virtBefore != 0 || virtAfter == 0 {
		t.Errorf("workbench: %d URLs virtualized under 16MiB (want 0), %d at most under 1KiB (want some)", virtBefore, virtAfter)
	}

	// stop-grace: 20s, then 400ms; hang.test's /wait was in flight.
	ts.mu.Lock()
	left := ts.left
	ts.mu.Unlock()
	if w := left.Sub(stopped); w < 400*time.Millisecond-5*time.Millisecond || w > 10*time.Second {
		t.Errorf("the fetch in flight at the stop was cut %v after it, stop-grace 400ms", w)
	}
	if d := returned.Sub(stopped); d < 400*time.Millisecond || d > 15*time.Second {
		t.Errorf("Run returned %v after the stop, stop-grace 400ms", d)
	}
	log := readLog(t, cfg.Dir)
	for _, want := range []string{`"setting":"crawl-delay-cap","old":"30ms","new":"150ms"`, `"setting":"stop-grace","old":"20s","new":"400ms"`} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %s", want)
		}
	}
}

// pageGaps are the gaps after the pages of host (robots.txt aside, which
// takes no 30ms) that ended in [from, to), to the request after each.
func pageGaps(ts *timingSites, host string, from, to time.Time) []time.Duration {
	var out []time.Duration
	for _, h := range pairs(ts.of(host), from) {
		if prev := h[0]; prev.path != "/robots.txt" && prev.end.After(from) && prev.end.Before(to) {
			out = append(out, h[1].start.Sub(prev.end))
		}
	}
	return out
}

// shortRetry reports whether a page of flaky.test was retried before
// until, less than 140ms after its first try.
func shortRetry(ts *timingSites, until time.Time) bool {
	for _, hs := range ts.attempts("flaky.test") {
		if len(hs) >= 2 && hs[1].start.Before(until) && hs[1].start.Sub(hs[0].end) < 140*time.Millisecond {
			return true
		}
	}
	return false
}

// someBelow reports whether a gap is under d.
func someBelow(gaps []time.Duration, d time.Duration) bool {
	for _, g := range gaps {
		if g < d {
			return true
		}
	}
	return false
}

// pairs returns the consecutive requests of hs whose second began after
// from.
func pairs(hs []timingHit, from time.Time) [][2]timingHit {
	var out [][2]timingHit
	for i := 1; i < len(hs); i++ {
		if hs[i].start.After(from) {
			out = append(out, [2]timingHit{hs[i-1], hs[i]})
		}
	}
	return out
}
