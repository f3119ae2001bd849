package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gowarc "github.com/nlnwa/gowarc/v3"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// Bounds asserted by TestCrawlHostileWeb on the petrel process.
const (
	hostileFetchers = 32
	// hostileIdleConns is the --max-idle-conns of the hostile crawl.
	hostileIdleConns = 32
	// fdSlack is what petrel may hold open beyond one connection per
	// fetcher: the keep-alive pool's idle connections (at most
	// --max-idle-conns), and 32 for stdio, the lock, the log, WARC and state
	// files, and the runtime's epoll and pipe descriptors.
	fdSlack = hostileIdleConns + 32
	// rssBound bounds the peak resident set (VmHWM) of petrel. Most of it
	// is fixed by the defaults: the text-digest Bloom filter (10⁷ digests at
	// 10⁻⁹, about 54 MiB) and the URL cache (64 MiB); the 4 MiB huge page
	// and the 16 MiB bombs are read through --max-body (1 MiB) caps. The
	// race detector multiplies memory use by 5 to 10.
	rssBound     = 384 << 20
	rssBoundRace = 1536 << 20
)

// procStats is what the monitor saw of the petrel process.
type procStats struct {
	maxFDs  int
	hwmKiB  int64
	samples int
}

// runMonitored runs petrel with args and samples its open descriptors and
// peak RSS every 20 ms until it exits.
func runMonitored(t *testing.T, bin string, timeout time.Duration, stderr *bytes.Buffer, args ...string) (procStats, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var ps procStats
	pid := cmd.Process.Pid
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if ctx.Err() != nil {
				t.Fatalf("petrel crawl did not finish within %s; stderr:\n%s", timeout, stderr.String())
			}
			return ps, err
		case <-tick.C:
			if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
				ps.maxFDs = max(ps.maxFDs, len(ents))
				ps.samples++
			}
			if hwm := vmHWM(pid); hwm > 0 {
				ps.hwmKiB = max(ps.hwmKiB, hwm)
			}
		}
	}
}

// vmHWM returns the peak resident set of process pid in KiB (0 if gone).
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// crawlStats reads the counters petrel saved at the end of a crawl.
func crawlStats(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "state", "stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]int64
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// writeFile writes s into dir/name and returns the path.
func writeFile(t *testing.T, dir, name, s string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// hostsWithoutPrivate returns the web's hosts file without the line of the
// private-address name, so that a crawl with --allow-private (needed on
// 127/8) can never dial testweb.PrivateIP: the name then fails to resolve
// like any unknown .test name.
func hostsWithoutPrivate(w *testweb.Web) string {
	var b strings.Builder
	for _, line := range strings.Split(string(w.HostsFile()), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == testweb.PrivateIP {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// warmBombs requests each bomb once before the crawl, so that the web
// builds them (compressing BombBytes takes seconds under the race detector)
// before petrel's timeouts run, and empties the request log.
func warmBombs(t *testing.T, w *testweb.Web) {
	t.Helper()
	addrs := map[string]string{}
	for _, line := range strings.Split(string(w.HostsFile()), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			addrs[f[1]] = f[0]
		}
	}
	tr := &http.Transport{DisableCompression: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, _ := net.SplitHostPort(addr)
		return (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(addrs[host], port))
	}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	for _, c := range w.HostileCases() {
		if !strings.HasSuffix(c.Name, "-bomb") {
			continue
		}
		req, _ := http.NewRequest("GET", c.URL+"bomb.html", nil)
		req.Header.Set("Accept-Encoding", "gzip, deflate, br")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("warming %s: %v", c.Name, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	w.ResetHits()
}

// warcSummary is what checkHostileWARC read back.
type warcSummary struct {
	requests  int
	records   int               // response and revisit records in all
	responses map[string]int    // key(host, path) → response and revisit records
	truncated map[string]string // key → WARC-Truncated
}

// checkHostileWARC reads every WARC file back with gowarc, checks the
// digests gowarc validates, and returns what it holds.
func checkHostileWARC(t *testing.T, dir string) warcSummary {
	t.Helper()
	s := warcSummary{responses: map[string]int{}, truncated: map[string]string{}}
	eachWARCRecord(t, dir, func(f string, rec gowarc.Record) {
		wr := rec.WarcRecord
		h := wr.WarcHeader()
		for _, v := range rec.Validation {
			if h.Get(gowarc.WarcTruncated) == "" { // a cut body cannot match its Content-Length
				t.Errorf("%s offset %d (%s): %v", f, rec.Offset, h.Get(gowarc.WarcTargetURI), v)
			}
		}
		switch wr.Type() {
		case gowarc.Request:
			s.requests++
		case gowarc.Response, gowarc.Revisit:
			k := urlKey(t, h.Get(gowarc.WarcTargetURI))
			s.responses[k]++
			s.records++
			if tr := h.Get(gowarc.WarcTruncated); tr != "" {
				s.truncated[k] = tr
			}
		}
	})
	return s
}

// nearDupLog returns the URLs petrel logged as near-duplicates.
func nearDupLog(t *testing.T, dir string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "logs", "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e struct {
			Msg string `json:"msg"`
			URL string `json:"url"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Msg == "near duplicate" {
			out = append(out, e.URL)
		}
	}
	return out
}

// TestCrawlHostileWeb crawls the full hostile web of the synthetic web together with
// a normal web of 200 hosts, and checks that every normal host is crawled
// completely, each hostile case is handled as its Expect says and counted,
// politeness holds for every request, the WARC files read back, the crawl
// ends on its own, and the process stays within its memory and descriptor
// bounds.
func TestCrawlHostileWeb(t *testing.T) {
	const hostDelay, ipDelay = 20 * time.Millisecond, 5 * time.Millisecond
	const retries = 2
	fetchTimeout := 2 * time.Second
	if raceEnabled { // the web in this process is slower under the detector, and so are its bombs
		fetchTimeout = 5 * time.Second
	}
	r := startWeb(t, testweb.Config{Hosts: 200, HostsPerIP: 4, PagesPerHost: 12, Seed: 5,
		FirstIP: netip.MustParseAddr("127.80.0.1"), Hostile: true,
		BombBytes: 16 << 20, HugeBytes: 4 << 20})
	w := r.web
	tmp := filepath.Dir(r.dir)
	hosts := writeFile(t, tmp, "hosts-no-private", hostsWithoutPrivate(w))
	warmBombs(t, w)

	start := time.Now()
	// The crawler is built as the tests are (racePetrel): the web runs in
	// this process, and under the detector its log's times lag a crawler
	// built without it by more than the 5 ms IP delay on a loaded machine.
	ps, err := runMonitored(t, racePetrel, 4*time.Minute, &r.stderr, "crawl", "--dir", r.dir, "--hosts", hosts, "--seeds", r.seeds,
		"--allow-private", "--system-dns=false", "--progress", "1s",
		"--host-delay", hostDelay.String(), "--ip-delay", ipDelay.String(),
		"--fetchers", strconv.Itoa(hostileFetchers), "--max-idle-conns", strconv.Itoa(hostileIdleConns), "--fetch-timeout", fetchTimeout.String(), "--retries", strconv.Itoa(retries),
		"--retry-delay", "100ms", "--max-body", "1MiB", "--max-urls-per-host", "150")
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("petrel crawl: %v\n%s", err, r.stderr.String())
	}
	hits := w.Hits()
	st := crawlStats(t, r.dir)
	t.Logf("crawl of %d requests ended on its own in %s; peak RSS %d MiB, at most %d open descriptors (%d samples)",
		len(hits), elapsed.Round(time.Millisecond), ps.hwmKiB>>10, ps.maxFDs, ps.samples)
	t.Logf("petrel said:\n%s", r.stderr.String())

	// Bounds of the process.
	bound := int64(rssBound)
	if raceEnabled {
		bound = rssBoundRace
	}
	if ps.hwmKiB<<10 > bound {
		t.Errorf("peak RSS %d MiB, bound %d MiB", ps.hwmKiB>>10, bound>>20)
	}
	if ps.maxFDs > hostileFetchers+fdSlack {
		t.Errorf("%d open descriptors, bound --fetchers + %d = %d", ps.maxFDs, fdSlack, hostileFetchers+fdSlack)
	}
	if ps.samples == 0 {
		t.Error("the monitor never sampled the process")
	}

	seen := map[string]int{}
	perHost := map[string]int{}
	for _, h := range hits {
		if h.Path == "/robots.txt" {
			continue
		}
		seen[key(h.Host, h.Path)]++
		perHost[h.Host]++
	}
	// Every normal host crawled completely, exactly once.
	expected := map[string]bool{}
	for _, u := range w.Expected() {
		expected[urlKey(t, u)] = true
	}
	for k := range expected {
		if seen[k] != 1 {
			t.Errorf("expected URL %s fetched %d times, want 1", k, seen[k])
		}
	}
	for k, n := range seen {
		if !expected[k] && !strings.Contains(k, testweb.HostileDomain+" ") {
			t.Errorf("unexpected fetch of normal-web URL %s (%d times)", k, n)
		}
	}
	for _, u := range w.Disallowed() {
		if n := seen[urlKey(t, u)]; n > 0 {
			t.Errorf("robots-disallowed URL %s fetched %d times", u, n)
		}
	}
	for _, u := range w.NoFollowed() {
		if n := seen[urlKey(t, u)]; n > 0 {
			t.Errorf("nofollow target %s fetched %d times", u, n)
		}
	}
	checkPoliteness(t, r.dir, hits, hostDelay, ipDelay)

	hk := func(c, path string) string { return key(c+"."+testweb.HostileDomain, path) }
	want := func(what string, got int, ok bool) {
		t.Helper()
		if !ok {
			t.Errorf("%s: got %d", what, got)
		}
	}
	once := func(c string, paths ...string) {
		t.Helper()
		for _, p := range paths {
			want(c+" "+p+" fetched once", seen[hk(c, p)], seen[hk(c, p)] == 1)
		}
	}
	never := func(c string, paths ...string) {
		t.Helper()
		for _, p := range paths {
			want(c+" "+p+" never fetched", seen[hk(c, p)], seen[hk(c, p)] == 0)
		}
	}
	counter := func(name string, min int64) {
		t.Helper()
		if st[name] < min {
			t.Errorf("counter %s = %d, want at least %d", name, st[name], min)
		}
	}

	// Traps: bounded, and cut by reason.
	// The calendar's pages differ in digits but also in weekday and month
	// names: the digest ends the trap once every combination was seen, and
	// the per-host budget bounds it before that.
	want("calendar pages fetched (bounded by the budget)", perHost["calendar."+testweb.HostileDomain], perHost["calendar."+testweb.HostileDomain] <= 150)
	want("session pages fetched (bounded)", perHost["session."+testweb.HostileDomain], perHost["session."+testweb.HostileDomain] <= 150)
	// /a/ and /a/a/ differ only in digits: the digest stops the deep trap
	// before the repeated-segment rule would (TestCrawlTrapRules checks it).
	for k := range seen {
		if strings.HasPrefix(k, "deep.") && strings.Count(k, "/a") > 3 {
			t.Errorf("deep trap: %s fetched despite the repeated-segment rule", k)
		}
	}
	counter("TextDuplicates", 3)
	counter("OverBudget", 1) // many-links: 5000 links, 150 URLs a host

	// Redirects.
	for k, n := range seen {
		if (strings.HasPrefix(k, "landing.") || strings.HasPrefix(k, "redirect.") || strings.HasPrefix(k, "loop.")) && n != 1 {
			t.Errorf("%s fetched %d times, want once", k, n)
		}
	}
	once("chain", "/chain/1", "/chain/2", "/chain/3", "/chain/4", "/chain/5", "/short/1", "/short-end.html")
	never("chain", "/chain/6", "/chain/7", "/chain-end.html")
	once("loop", "/loop/a", "/loop/b", "/self")
	counter("CutRedirects", 1)
	counter("Redirects", 10)

	// Errors: recorded, retried, timed out.
	ws := checkHostileWARC(t, filepath.Join(r.dir, "warc"))
	for _, p := range []string{"/404", "/410", "/500", "/503"} {
		if ws.responses[hk("status", p)] == 0 {
			t.Errorf("status %s not in the WARC", p)
		}
	}
	want("/500 tried 1 + retries times", seen[hk("status", "/500")], seen[hk("status", "/500")] == 1+retries)
	want("/503 tried 1 + retries times", seen[hk("status", "/503")], seen[hk("status", "/503")] == 1+retries)
	want("reset page retried", seen[hk("reset", "/")]+seen[hk("reset", "/reset.html")], seen[hk("reset", "/")]+seen[hk("reset", "/reset.html")] >= 1)
	counter("Retries", 4)
	counter("Timeouts", 3) // trickle, blackhole, stall, robots-timeout
	counter("FetchErrors", 6)
	counter("Status5xx", 2*(1+retries))
	if n := perHost["robots-timeout."+testweb.HostileDomain]; n != 0 {
		t.Errorf("robots-timeout: %d requests other than robots.txt, want none", n)
	}

	// Big bodies.
	if tr := ws.truncated[hk("huge", "/huge.html")]; tr != "length" {
		t.Errorf("huge page: WARC-Truncated %q, want length", tr)
	}
	counter("Truncated", 1)
	for _, c := range []string{"gzip-bomb", "deflate-bomb", "brotli-bomb"} {
		// Once, or retried after a timeout on a loaded machine; stored.
		n := seen[hk(c, "/bomb.html")]
		want(c+" /bomb.html fetched 1 to 1 + retries times", n, n >= 1 && n <= 1+retries)
		want(c+" /bomb.html stored", ws.responses[hk(c, "/bomb.html")], ws.responses[hk(c, "/bomb.html")] >= 1)
	}

	// Duplicates.
	once("dups", "/a.html", "/b.html", "/c.html")
	counter("Duplicates", 2)
	truth := map[string]bool{}
	var truePairs int
	for _, g := range w.NearDuplicates() {
		for _, u := range g {
			truth[urlKey(t, u)] = true
		}
		truePairs += len(g) - 1 // the first page of a group is the original
	}
	var tp, fp int
	for _, u := range nearDupLog(t, r.dir) {
		k := urlKey(t, u)
		switch {
		case truth[k]:
			tp++
		case strings.HasPrefix(k, "near-dups."):
			fp++
		}
	}
	t.Logf("near-duplicates case: %d of %d flagged, %d false: precision %.2f, recall %.2f; NearDuplicates counter %d (whole crawl)",
		tp, truePairs, fp, float64(tp)/float64(max(tp+fp, 1)), float64(tp)/float64(max(truePairs, 1)), st["NearDuplicates"])
	if tp != truePairs || fp != 0 {
		t.Errorf("near-duplicates: %d true, %d false, want %d and 0", tp, fp, truePairs)
	}

	// Content.
	once("soup", "/soup/1.html", "/soup/2.html", "/soup/3.html", "/soup/4.html", "/soup/5.html?a=1&b=2")
	never("soup", "/soup/comment.html")
	once("cp1252", "/caf%C3%A9.html")
	once("sjis", "/%E6%97%A5%E6%9C%AC.html")
	once("landing", "/base/a.html", "/base/sub/b.html", "/root.html")
	want("base host: only its page fetched", perHost["base."+testweb.HostileDomain], perHost["base."+testweb.HostileDomain] == 1)
	counter("LinksDropped", 5000)
	once("robots-meta", "/from-noindex.html", "/rel-ok.html")
	counter("NoFollow", 2)
	once("mislabelled", "/image.html")

	// robots.txt.
	never("robots-huge", "/early/x.html")
	once("robots-huge", "/late/x.html")
	once("robots-garbage", "/", "/page.html")
	never("robots-redirect", "/secret/x.html")
	once("robots-redirect", "/open.html")
	counter("RobotsRedirects", 2)

	// DNS: the unresolvable name and the private name (absent from this
	// crawl's hosts file).
	counter("DNSFailures", 2)
	for _, h := range hits {
		if h.IP.String() == testweb.PrivateIP {
			t.Errorf("private address dialled: %+v", h)
		}
	}

	if ws.requests > len(hits) {
		t.Errorf("%d request records, but the server logged only %d requests", ws.requests, len(hits))
	}
	// Every exchange the crawl counts as stored is a request record and a
	// response or revisit record: reading back fewer means the files were
	// read short, and a URL missing below may be missing from the reading.
	if ws.records != int(st["Stored"]) || ws.requests != int(st["Stored"]) {
		t.Errorf("read back %d request and %d response or revisit records; the crawl wrote %d of each (Stored)",
			ws.requests, ws.records, st["Stored"])
	}
	for k := range expected {
		if ws.responses[k] == 0 {
			t.Errorf("fetched URL %s has no response record; its requests: %+v; crawl log: %s", k,
				hitsFor(hits, k), logLinesAbout(t, r.dir, strings.Fields(k)...))
		}
	}
}

// hitsFor returns the synthetic web's log entries of one URL key.
func hitsFor(hits []testweb.Hit, k string) []testweb.Hit {
	var out []testweb.Hit
	for _, h := range hits {
		if key(h.Host, h.Path) == k {
			out = append(out, h)
		}
	}
	return out
}

// logLinesAbout returns the lines of the crawl log and the event log that
// mention every one of parts (for failure messages: a URL's host and path).
func logLinesAbout(t *testing.T, dir string, parts ...string) string {
	var out []string
	for _, name := range []string{"crawl.log", "events.jsonl"} {
		b, err := os.ReadFile(filepath.Join(dir, "logs", name))
		if err != nil {
			out = append(out, err.Error())
			continue
		}
	lines:
		for _, l := range strings.Split(string(b), "\n") {
			for _, s := range parts {
				if !strings.Contains(l, s) {
					continue lines
				}
			}
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return "(no line)"
	}
	return strings.Join(out, "\n")
}

// TestCrawlRefusesPrivate crawls, without --allow-private, a seed whose
// name points to testweb.PrivateIP and seeds on the synthetic web (on
// 127/8): the address guard refuses every one, before any connection, and
// the crawl, no seed fetched, fails (exit 1).
func TestCrawlRefusesPrivate(t *testing.T) {
	r := startWeb(t, testweb.Config{Hosts: 4, Seed: 3, FirstIP: netip.MustParseAddr("127.81.0.1"), Hostile: true,
		BombBytes: 1 << 16, HugeBytes: 1 << 16})
	w := r.web
	private := "http://private." + testweb.HostileDomain + "/"
	seeds := writeFile(t, filepath.Dir(r.dir), "private-seeds", private+"\n"+strings.Join(w.NormalSeeds(), "\n")+"\n")
	w.ResetHits()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, petrel, "crawl", "--dir", r.dir, "--hosts", r.hosts, "--seeds", seeds,
		"--system-dns=false", "--progress", "0", "--host-delay", "10ms", "--ip-delay", "5ms")
	cmd.Stderr = &r.stderr
	var ee *exec.ExitError
	if err := cmd.Run(); !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(r.stderr.String(), "no seed was fetched") {
		t.Fatalf("petrel crawl: %v, want exit 1 and no seed fetched\n%s", err, r.stderr.String())
	}
	st := crawlStats(t, r.dir)
	if want := int64(1 + len(w.NormalSeeds())); st["AddressRefused"] < want {
		t.Errorf("AddressRefused = %d, want at least %d", st["AddressRefused"], want)
	}
	if hits := w.Hits(); len(hits) != 0 {
		t.Errorf("%d requests reached the synthetic web, want none: %+v", len(hits), hits[0])
	}
	if st["Fetched"] != 0 || st["RobotsFetched"] != 0 {
		t.Errorf("fetched %d pages and %d robots.txt, want none", st["Fetched"], st["RobotsFetched"])
	}
	// Each refused seed is named once on stderr, with the flag that
	// permits it.
	for _, seed := range append([]string{private}, w.NormalSeeds()...) {
		if n := strings.Count(r.stderr.String(), "seed "+seed+" refused"); n != 1 {
			t.Errorf("stderr names the refused seed %s %d times, want once:\n%s", seed, n, r.stderr.String())
		}
	}
	if !strings.Contains(r.stderr.String(), "--allow-private permits it") {
		t.Errorf("stderr does not say --allow-private permits the refused seeds:\n%s", r.stderr.String())
	}
}

// TestCrawlTrapRules crawls single trap hosts with one trap rule tightened,
// so that the rule, and not the duplicate digest, ends the trap: each cut is
// counted under its reason and nothing beyond the cut is requested.
func TestCrawlTrapRules(t *testing.T) {
	r := startWeb(t, testweb.Config{Hosts: 4, Seed: 3, FirstIP: netip.MustParseAddr("127.82.0.1"), Hostile: true,
		BombBytes: 1 << 16, HugeBytes: 1 << 16})
	w := r.web
	entry := map[string]string{}
	for _, c := range w.HostileCases() {
		entry[c.Name] = c.URL
	}
	cases := []struct {
		name    string
		seed    string
		flags   []string
		counter string
		maxHits int // requests to the host, robots.txt excluded
	}{
		// / → /cal/2026/11/30 (depth 1) → its 3 links (depth 2): cut.
		{"max-depth", entry["calendar"], []string{"--max-depth", "1"}, "CutDepth", 2},
		// / → /a/ (a once) → /a/a/ (twice): cut.
		{"repeated segment", entry["deep"], []string{"--max-segment-repeats", "1"}, "CutRepeatedSegment", 2},
		// / → /a/ (2 bytes longer) → /a/a/ (4 bytes longer): cut.
		{"url length", entry["deep"], []string{"--max-url-length", strconv.Itoa(len(entry["deep"]) + 2)}, "CutLength", 2},
		// /chain/1 → ... → /chain/3: cut.
		{"max-redirects", strings.TrimSuffix(entry["chain"], "/") + "/chain/1", []string{"--max-redirects", "2"}, "CutRedirects", 2},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w.ResetHits()
			dir := filepath.Join(filepath.Dir(r.dir), fmt.Sprintf("crawl-%d", i))
			args := append([]string{"crawl", "--dir", dir, "--hosts", r.hosts, "--allow-private", "--system-dns=false",
				"--progress", "0", "--host-delay", "10ms", "--ip-delay", "5ms"}, c.flags...)
			var stderr bytes.Buffer
			if _, err := runMonitored(t, petrel, time.Minute, &stderr, append(args, c.seed)...); err != nil {
				t.Fatalf("petrel crawl: %v\n%s", err, stderr.String())
			}
			st := crawlStats(t, dir)
			if st[c.counter] < 1 {
				t.Errorf("%s = %d, want at least 1", c.counter, st[c.counter])
			}
			n := 0
			for _, h := range w.Hits() {
				if h.Path != "/robots.txt" {
					n++
				}
			}
			if n == 0 || n > c.maxHits {
				t.Errorf("%d requests, want 1 to %d", n, c.maxHits)
			}
		})
	}
}
