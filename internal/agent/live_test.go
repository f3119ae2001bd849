package agent

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// slowSite is a server whose every page takes 200 ms to answer and links
// to ten more of its pages (a page under /p/ links nowhere: a probe for
// the filters); it serves several host names (one address)
// and logs how many requests it serves at once, over all of them.
type slowSite struct {
	urls     []string // a seed for each of its names
	inFlight atomic.Int32
	mu       sync.Mutex
	peaks    []peak // concurrency when each request started
}

type peak struct {
	at time.Time
	n  int32
}

// startSlowSite serves the slow site on ip with the given host names.
func startSlowSite(t *testing.T, ip string, names ...string) *slowSite {
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	s := &slowSite{}
	for _, name := range names {
		s.urls = append(s.urls, fmt.Sprintf("http://%s:%d/", name, ln.Addr().(*net.TCPAddr).Port))
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		n := s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		s.mu.Lock()
		s.peaks = append(s.peaks, peak{time.Now(), n})
		s.mu.Unlock()
		time.Sleep(200 * time.Millisecond)
		var i int
		fmt.Sscanf(r.URL.Path, "/s/%d", &i)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>")
		for k := 1; k <= 10 && !strings.HasPrefix(r.URL.Path, "/p/"); k++ {
			fmt.Fprintf(w, `<a href="/s/%d">p</a>`, i*10+k)
		}
		fmt.Fprint(w, "</body></html>")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// maxInFlight is the most requests the site served at once among those
// that started in [from, to).
func (s *slowSite) maxInFlight(from, to time.Time) int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var m int32
	for _, p := range s.peaks {
		if !p.at.Before(from) && p.at.Before(to) {
			m = max(m, p.n)
		}
	}
	return m
}

// started is the number of requests the site began at or after from.
func (s *slowSite) started(from time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.peaks {
		if !p.at.Before(from) {
			n++
		}
	}
	return n
}

// timedWriter records when each progress line was written.
type timedWriter struct {
	mu    sync.Mutex
	lines []time.Time
}

func (w *timedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if strings.HasPrefix(string(p), "pages ") {
		w.lines = append(w.lines, time.Now())
	}
	return len(p), nil
}

func (w *timedWriter) count(from time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, t := range w.lines {
		if t.After(from) {
			n++
		}
	}
	return n
}

// TestReconfigureEveryLiveSetting changes, with TestReconfigureTiming (the
// settings of when requests are made), every live setting in the middle of
// a crawl of the synthetic web and a slow site, and observes each one's
// effect: in the servers' request logs where a setting shapes requests
// (gaps per host and per address, requests at once, hosts out of scope,
// pages per host, timeouts, truncated bodies), otherwise in the agent's
// gauges, counters and log (pools, progress lines, checkpoints, links
// dropped, depth).
func TestReconfigureEveryLiveSetting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := testweb.Start(ctx, testweb.Config{Hosts: 12, HostsPerIP: 3, PagesPerHost: 60, PageBytes: 4096, Seed: 5,
		FirstIP: netip.MustParseAddr("127.83.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// Four names for the slow site: under the limits set below (depth 3,
	// three links a page, 40 pages a host) each name has 40 pages, one
	// request at a time for the address most of the crawl, so that on a
	// loaded machine too URLs remain queued when max-urls ends the crawl.
	// probe.test, seeded with a page that links nowhere, is given the
	// filters' probes once they are set.
	slowNames := []string{"slow-0.test", "slow-1.test", "slow-2.test", "slow-3.test", "probe.test"}
	slow := startSlowSite(t, "127.83.1.1", slowNames...)
	probe := slow.urls[4]
	dir := t.TempDir()
	hostsFile, seeds, err := w.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(hostsFile, os.O_APPEND|os.O_WRONLY, 0)
	for _, name := range slowNames {
		fmt.Fprintln(f, "127.83.1.1", name)
	}
	f.Close()

	cfg := Defaults()
	cfg.Dir = filepath.Join(dir, "crawl")
	cfg.Fetch.HostsFile, cfg.SeedsFile, cfg.SeedURLs = hostsFile, seeds, append(slow.urls[:4:4], probe+"p/0")
	cfg.Fetch.AllowPrivate, cfg.Fetch.SystemDNS = true, false
	cfg.Frontier.HostDelay, cfg.Frontier.IPDelay = 5*time.Millisecond, 2*time.Millisecond
	cfg.Fetchers, cfg.Parsers, cfg.Progress, cfg.CheckpointEvery = 4, 1, time.Hour, 0
	cfg.Frontier.WorkbenchBytes, cfg.Sieve.URLCacheBytes, cfg.Sieve.BufferKeys = 16<<20, 1<<20, 1<<12
	progress := &timedWriter{}
	a, err := Open(cfg, progress)
	if err != nil {
		t.Fatal(err)
	}
	// The frontier, taken before Run: the agent lets go of it when the
	// crawl ends, and its settings stay readable after its close.
	fr := a.frontier
	var depthMu sync.Mutex
	type seen struct {
		at   time.Time
		meta frontier.Meta
	}
	var handled []seen
	a.observe = func(_ string, m frontier.Meta) {
		depthMu.Lock()
		handled = append(handled, seen{time.Now(), m})
		depthMu.Unlock()
	}
	runErr := make(chan error, 1)
	runCtx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	go func() { runErr <- a.Run(runCtx) }()
	// Until 40 requests and a gap under the coming host delay (a loaded
	// machine spreads the first requests out), bounded.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if hits := w.Hits(); len(hits) >= 40 && hasGapUnder(hits, 150*time.Millisecond) {
			break
		}
	}

	// Refused, all or nothing: nothing changes.
	for _, bad := range []struct {
		changes map[string]any
		want    string
	}{
		{map[string]any{"host-delay": "1s", "assign": "authority"}, "--assign cannot change while the crawl runs: the politeness keys"},
		{map[string]any{"host-delay": "1s", "fetchers": 0}, "--fetchers must be between 1 and 100000, not 0"},
		{map[string]any{"host-delay": "1s", "hots": "x"}, `unknown setting "hots"`},
		{map[string]any{"max-body": "lots"}, "max-body: want a size"},
	} {
		if _, err := a.Reconfigure(ctx, bad.changes); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Reconfigure(%v): %v, want an error with %q", bad.changes, err, bad.want)
		}
	}
	if got := fr.Settings().HostDelay; got != 5*time.Millisecond {
		t.Fatalf("a refused change was applied: host-delay %v", got)
	}

	first := map[string]any{
		"host-delay": "150ms", "ip-delay": "60ms", "fetchers": 6, "parsers": 3, "progress": "30ms",
		"checkpoint-every": "100ms", "max-links": 3, "scope": "host", "max-depth": 3, "max-body": "1KiB",
		"max-urls-per-host": 40, "host-down-backoff": "1m", "host-down-give-up": "2h",
		"schedule-filter": "not PathStartsWith(/p/4)", "fetch-filter": "not PathStartsWith(/p/5)",
		"parse-filter": "not PathStartsWith(/p/1)", "follow-filter": "not PathStartsWith(/p/2)",
		"store-filter": "not PathStartsWith(/p/3)",
	}
	before := a.stats.Snapshot()
	t1 := time.Now()
	changes, err := a.Reconfigure(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	applied := time.Now() // the scope and the filters are in force from here
	if len(changes) != len(first) {
		t.Errorf("%d changes reported, want %d: %+v", len(changes), len(first), changes)
	}
	// A page each for the parse and the follow filter to refuse, whatever
	// pages of the synthetic web are left (a loaded machine may have
	// fetched them all before the change).
	for _, r := range a.AddSeeds([]string{probe + "p/1-probe", probe + "p/2-probe"}) {
		if !r.Accepted {
			t.Errorf("probe %s refused: %s", r.URL, r.Reason)
		}
	}
	// slack: a fetch begun before Reconfigure returned reaches the server
	// a little later.
	const slack = 50 * time.Millisecond
	// Phase one lasts 1.2s, and on a loaded machine until the periodic
	// checkpoints have come (each one takes what the machine gives it).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if time.Since(applied) >= 1200*time.Millisecond && a.stats.Checkpoints.Load()-before["Checkpoints"] >= 3 || time.Now().After(deadline) {
			break
		}
	}
	mid := a.stats.Snapshot()
	t2 := time.Now()
	second := map[string]any{"host-delay": "0s", "ip-delay": "0s", "parallel-per-key": 3, "parallel-per-ip": 3,
		"fetch-timeout": "100ms"}
	if _, err := a.Reconfigure(ctx, second); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if slow.maxInFlight(t2.Add(slack), time.Now()) >= 2 && a.stats.Timeouts.Load() > mid["Timeouts"] {
			break
		}
	}
	// Shrink again: one request at a time, two fetchers; the slow site
	// answers within the fetch timeout again.
	t3 := time.Now()
	shrink := map[string]any{"parallel-per-key": 1, "parallel-per-ip": 1, "fetchers": 2, "fetch-timeout": "10s"}
	if _, err := a.Reconfigure(ctx, shrink); err != nil {
		t.Fatal(err)
	}
	// The requests begun before the change end within the 100ms timeout.
	settled := t3.Add(500 * time.Millisecond)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && slow.started(settled) < 3; time.Sleep(10 * time.Millisecond) {
	}
	shrunk := a.stats.Snapshot()
	set := fr.Settings()
	// A few more pages (the slow site's, five a second), then max-urls
	// ends the crawl.
	limit := a.stats.Fetched.Load() + 5
	if _, err := a.Reconfigure(ctx, map[string]any{"max-urls": limit}); err != nil {
		t.Fatalf("max-urls: %v (the crawl ran out of URLs before it was set: %d queued)", err, a.stats.Queued.Load())
	}
	second["max-urls"] = limit
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	end := a.stats.Snapshot()

	// Every live setting was changed here or by TestReconfigureTiming.
	for _, s := range a.cfg.Table() {
		_, in1 := first[s.Name]
		_, in2 := second[s.Name]
		_, in3 := timingFirst[s.Name]
		_, in4 := timingSecond[s.Name]
		if s.Live && !in1 && !in2 && !in3 && !in4 {
			t.Errorf("live setting --%s is not changed by this test or TestReconfigureTiming", s.Name)
		}
	}

	hits := w.Hits()
	lastByHost, lastByIP := map[string]time.Time{}, map[netip.Addr]time.Time{}
	smallGapBefore := false
	seedHosts := map[string]bool{}
	for _, s := range w.Seeds() {
		seedHosts[strings.Split(strings.TrimPrefix(s, "http://"), ":")[0]] = true
	}
	for _, h := range hits {
		if h.Path == "/robots.txt" {
			continue
		}
		// A request begun once Reconfigure returned keeps the new delays
		// from the end of the one before it, even one that ended before the
		// change.
		phase1 := h.Start.After(applied.Add(slack)) && h.Start.Before(t2)
		if prev, ok := lastByHost[h.Host]; ok {
			gap := h.Start.Sub(prev)
			if h.Start.Before(t1) && gap < 150*time.Millisecond {
				smallGapBefore = true
			}
			if phase1 && gap < 150*time.Millisecond-time.Millisecond {
				t.Errorf("host %s: gap %v after host-delay became 150ms", h.Host, gap)
			}
		}
		if prev, ok := lastByIP[h.IP]; ok && phase1 {
			if gap := h.Start.Sub(prev); gap < 60*time.Millisecond-time.Millisecond {
				t.Errorf("ip %s: gap %v after ip-delay became 60ms", h.IP, gap)
			}
		}
		if h.Start.After(applied.Add(slack)) && strings.HasPrefix(h.Path, "/p/5") {
			t.Errorf("%s%s requested after the fetch filter refused /p/5…", h.Host, h.Path)
		}
		if h.Start.After(applied.Add(slack)) && !seedHosts[h.Host] {
			t.Errorf("%s%s requested %v after the scope became host (not a seed's host)", h.Host, h.Path, h.Start.Sub(applied))
		}
		// A response the crawler cut short (max-body 1KiB: every page
		// from t1 on may be one) can have its last write begin after the
		// crawler closed — between the writes of a 4KiB page on a loaded
		// machine — and before the server has seen the close (Cut is then
		// false): its End can follow the crawler's end. Its Start never
		// does, so it bounds that exchange's end instead.
		end := h.End
		if h.Start.After(t1) {
			end = h.Start
		}
		lastByHost[h.Host], lastByIP[h.IP] = end, end
	}
	if !smallGapBefore {
		t.Error("no gap under 150ms before the change: the test shows nothing")
	}
	if m := slow.maxInFlight(time.Time{}, t2); m != 1 {
		t.Errorf("slow site: %d requests at once before parallel-per-key 3, want 1", m)
	}
	if m := slow.maxInFlight(t2.Add(slack), t3); m < 2 {
		t.Errorf("slow site: at most %d requests at once after parallel-per-key 3, want more than 1", m)
	}
	if n, m := slow.started(settled), slow.maxInFlight(settled, time.Now()); n < 3 || m != 1 {
		t.Errorf("slow site: %d requests begun after parallel-per-key went back to 1, at most %d at once; want 3 or more, 1", n, m)
	}
	if shrunk["Fetchers"] != 2 {
		t.Errorf("%d fetchers after fetchers became 2", shrunk["Fetchers"])
	}
	if d := end["Timeouts"] - mid["Timeouts"]; d == 0 {
		t.Error("no timeout after fetch-timeout became 100ms (the slow site answers in 200ms)")
	}
	if d := mid["Truncated"] - before["Truncated"]; d == 0 {
		t.Error("no body truncated after max-body became 1KiB (pages are 4KiB)")
	}
	if d := mid["LinksDropped"] - before["LinksDropped"]; d == 0 {
		t.Error("no link dropped after max-links became 3")
	}
	if mid["OutOfScope"]+mid["CutAtDispatch"] == before["OutOfScope"]+before["CutAtDispatch"] {
		t.Error("nothing refused after the scope became host")
	}
	for _, stage := range []string{"Schedule", "Fetch", "Parse", "Follow", "Store"} {
		if end["Filtered"+stage] == before["Filtered"+stage] {
			t.Errorf("nothing refused by the %s filter after it was set", strings.ToLower(stage))
		}
	}
	if got := end["Fetched"]; got > limit+10 {
		t.Errorf("%d pages fetched, max-urls became %d", got, limit)
	}
	if end["Queued"] == 0 {
		t.Errorf("the crawl ended with nothing queued: it ran out of URLs, max-urls (%d) did not end it", limit)
	}
	if mid["Fetchers"] != 6 || mid["Parsers"] != 3 {
		t.Errorf("pools %d fetchers, %d parsers; want 6 and 3", mid["Fetchers"], mid["Parsers"])
	}
	if n := progress.count(t1); n < 10 {
		t.Errorf("%d progress lines after progress became 30ms", n)
	}
	if n := mid["Checkpoints"] - before["Checkpoints"]; n < 3 {
		t.Errorf("%d checkpoints in phase one (at least 1.2s) after checkpoint-every became 100ms", n)
	}
	depthMu.Lock()
	for _, s := range handled {
		if s.at.After(t1.Add(time.Second)) && s.meta.Depth > 3 {
			t.Errorf("a page of depth %d handled after max-depth became 3", s.meta.Depth)
			break
		}
	}
	depthMu.Unlock()
	if set.HostDownBackoff != time.Minute || set.HostDownGiveUp != 2*time.Hour {
		t.Errorf("the frontier decides with host-down-backoff %s, host-down-give-up %s; want 1m, 2h", set.HostDownBackoff, set.HostDownGiveUp)
	}
	if set.MaxURLsPerKey != 40 {
		t.Errorf("the frontier decides with max-urls-per-host %d, want 40", set.MaxURLsPerKey)
	}
	for host, n := range pagesPerHost(hits) {
		if n > 40 {
			t.Errorf("%s: %d pages, max-urls-per-host 40", host, n)
		}
	}
	log := readLog(t, cfg.Dir)
	if !strings.Contains(log, `"msg":"setting changed","setting":"host-delay","old":"5ms","new":"150ms"`) {
		t.Errorf("the crawl log lacks the host-delay change (old → new)")
	}
}

// hasGapUnder reports whether two requests to one host (robots.txt aside)
// follow each other by less than d, from the end of one to the start of
// the next.
func hasGapUnder(hits []testweb.Hit, d time.Duration) bool {
	sort.Slice(hits, func(i, j int) bool { return hits[i].Start.Before(hits[j].Start) })
	last := map[string]time.Time{}
	for _, h := range hits {
		if h.Path == "/robots.txt" {
			continue
		}
		if prev, ok := last[h.Host]; ok && h.Start.Sub(prev) < d {
			return true
		}
		last[h.Host] = h.End
	}
	return false
}

// pagesPerHost counts the distinct pages (robots.txt aside) of each host.
func pagesPerHost(hits []testweb.Hit) map[string]int {
	seen, out := map[string]bool{}, map[string]int{}
	for _, h := range hits {
		if k := h.Host + h.Path; h.Path != "/robots.txt" && !seen[k] {
			seen[k] = true
			out[h.Host]++
		}
	}
	return out
}

func readLog(t *testing.T, dir string) string {
	t.Helper()
	for _, name := range []string{"events.jsonl", "crawl.log"} {
		if b, err := os.ReadFile(filepath.Join(dir, "logs", name)); err == nil && strings.Contains(string(b), `"msg":`) {
			return string(b)
		}
	}
	t.Fatal("no event log")
	return ""
}

// TestReconfigureSurvivesRestart checks that a change made while running
// is saved in state/ and applied by the next run, unless the command line
// gives that setting again: then the command line wins, and the log says
// so.
func TestReconfigureSurvivesRestart(t *testing.T) {
	c := newTestCrawl(t, "127.84.0.1", 4, 40, func(c *Config, _ *testweb.Web) { c.Frontier.HostDelay = 50 * time.Millisecond })
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.a.Run(ctx) }()
	for len(c.web.Hits()) < 5 {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := c.a.Reconfigure(context.Background(), map[string]any{"host-delay": "70ms", "max-links": 9}); err != nil {
		t.Fatal(err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := c.a.Reconfigure(context.Background(), map[string]any{"max-links": 8}); err != ErrNotRunning {
		t.Errorf("Reconfigure after Run: %v, want ErrNotRunning", err)
	}
	cfg := c.cfg
	cfg.MaxLinks, cfg.Given = 11, []string{"max-links"}
	a, err := Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.closeAll()
	if a.cfg.Frontier.HostDelay != 70*time.Millisecond {
		t.Errorf("restart: host-delay %v, want the saved 70ms", a.cfg.Frontier.HostDelay)
	}
	if a.cfg.MaxLinks != 11 {
		t.Errorf("restart: max-links %d, want the command line's 11", a.cfg.MaxLinks)
	}
	a.log.Info("flush") // the handler writes each record at once
	if log := readLog(t, cfg.Dir); !strings.Contains(log, `"msg":"the command line overrides a setting changed while the crawl ran","setting":"max-links","saved":9,"given":11`) {
		t.Errorf("the log does not say the command line overrode the saved max-links:\n%s", log)
	}
}
