package e2e

import (
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// checkOnce asserts that every URL the web expects was fetched exactly
// once, and nothing else.
func checkOnce(t *testing.T, r *crawlRun, hits []testweb.Hit) {
	t.Helper()
	expected := map[string]bool{}
	for _, u := range r.web.Expected() {
		expected[urlKey(t, u)] = true
	}
	seen := map[string]int{}
	for _, h := range hits {
		if h.Path != "/robots.txt" {
			seen[key(h.Host, h.Path)]++
		}
	}
	missing := 0
	for k := range expected {
		if seen[k] != 1 {
			if missing++; missing <= 5 {
				t.Errorf("expected URL %s fetched %d times, want 1", k, seen[k])
			}
		}
	}
	for k, n := range seen {
		if !expected[k] {
			t.Errorf("unexpected fetch of %s (%d times)", k, n)
		}
	}
	if missing > 5 {
		t.Errorf("%d of %d expected URLs not fetched once", missing, len(expected))
	}
}

// TestConsoleDelayBounds: 2,000 requests with a 15 KB Host header add
// less than a megabyte to events.jsonl (30 MB before: each refusal logged
// with the header whole). On a running crawl, PATCH /config with an ip-delay
// of 2562047h (which wrapped the scheduler's clock and turned politeness
// off) is refused on one line; a host delay raised to an hour and lowered
// back two seconds later stops holding the hosts already waiting, so the
// crawl ends with every page fetched once and no politeness violation in
// the web's log.
func TestConsoleDelayBounds(t *testing.T) {
	t.Parallel() // waits more than it computes: see the package doc
	const hostDelay, ipDelay = 50 * time.Millisecond, 20 * time.Millisecond
	r := startWeb(t, testweb.Config{Hosts: 8, HostsPerIP: 2, PagesPerHost: 30, Seed: 11, FirstIP: netip.MustParseAddr("127.68.0.1")})
	c := startConsoleCrawl(t, r, "--host-delay", hostDelay.String(), "--ip-delay", ipDelay.String(), "--fetchers", "16", "--retry-delay", "100ms")
	for _, bad := range []map[string]any{{"ip-delay": "2562047h"}, {"host-delay": "61m"}} {
		code, b := c.call(t, "PATCH", "/api/v1/config", bad, true)
		if code != http.StatusBadRequest || !strings.Contains(string(b), "must be between 0s and 1h") {
			t.Errorf("PATCH %v: %d %s, want 400 saying the range", bad, code, b)
		}
	}
	if got := c.settings(t)["ip-delay"]; got != ipDelay.String() {
		t.Fatalf("ip-delay after a refused PATCH: %v", got)
	}
	c.must(t, "PATCH", "/api/v1/config", map[string]any{"host-delay": "1h"})
	raised := time.Now()
	floodHost(t, c, 2000) // while the hosts wait: the crawl cannot end meanwhile
	time.Sleep(time.Until(raised.Add(2 * time.Second)))
	c.must(t, "PATCH", "/api/v1/config", map[string]any{"host-delay": hostDelay.String()})
	if err := c.wait(t, 2*time.Minute); err != nil {
		t.Fatalf("petrel crawl: %v\n%s", err, c.log())
	}
	hits := r.web.Hits()
	checkOnce(t, r, hits)
	checkPoliteness(t, c.dir, hits, hostDelay, ipDelay)
	events, err := os.ReadFile(filepath.Join(c.dir, "logs", "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(events), "Host is not the console's address"); n == 0 || len(events) > 1<<20 {
		t.Errorf("events.jsonl: %d bytes, %d refusals of a foreign Host logged; want some, the log under 1 MiB", len(events), n)
	}
}

// floodHost sends n requests with a 15 KB Host header to c's console, as
// fast as one connection allows: each is refused (403).
func floodHost(t *testing.T, c *consoleCrawl, n int) {
	t.Helper()
	host := strings.Repeat("h", 15000)
	for i := 0; i < n; i++ {
		req, _ := http.NewRequest("GET", c.base+"/api/v1/status", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("request %d with a foreign Host: %d, want 403", i, resp.StatusCode)
		}
	}
}

// TestConsoleConnectionFlood: 3,000 idle connections to the console of a
// crawl whose descriptor limit is 512 take no more than the console's cap;
// the ones past it are closed, the refusals logged within their bound, and
// the crawl ends with every page fetched once.
func TestConsoleConnectionFlood(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit not found: the test lowers the crawl's descriptor limit with it")
	}
	r := startWeb(t, testweb.Config{Hosts: 8, HostsPerIP: 2, PagesPerHost: 40, Seed: 13, FirstIP: netip.MustParseAddr("127.69.0.1")})
	c := &consoleCrawl{crawlRun: r, under: []string{prlimit, "--nofile=512:512"}, done: make(chan error, 1)}
	c.start(t, "--host-delay", "100ms", "--ip-delay", "20ms", "--fetchers", "16", "--retry-delay", "100ms")
	addr := strings.TrimPrefix(c.base, "http://")
	var flood []net.Conn
	t.Cleanup(func() {
		for _, fc := range flood {
			fc.Close()
		}
	})
	began := time.Now()
	for i := 0; i < 3000; i++ {
		fc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			break // the listener's backlog is full: the flood is as large as it gets
		}
		flood = append(flood, fc)
	}
	if len(flood) < 1000 {
		t.Fatalf("only %d connections opened", len(flood))
	}
	if err := c.wait(t, 3*time.Minute); err != nil {
		t.Fatalf("petrel crawl under %d idle console connections: %v\n%s", len(flood), err, c.log())
	}
	checkOnce(t, r, r.web.Hits())
	events, err := os.ReadFile(filepath.Join(c.dir, "logs", "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := strings.Count(string(events), "too many connections open")
	if bound := 10 * (int(time.Since(began)/time.Second) + 2); n == 0 || n > bound {
		t.Errorf("%d refused connections logged, want some, at most 10 a second (%d)", n, bound)
	}
}
