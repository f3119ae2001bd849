package e2e

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestStopAndResume interrupts a crawl with SIGINT in the middle, then runs
// the same command again on the same directory: the crawl resumes, every
// reachable page is fetched exactly once over both runs, and the WARC files
// of both runs hold them all.
func TestStopAndResume(t *testing.T) {
	const hostDelay, ipDelay = 40 * time.Millisecond, 20 * time.Millisecond
	r := startWeb(t, testweb.Config{Hosts: 24, HostsPerIP: 4, PagesPerHost: 20, Seed: 11, FirstIP: netip.MustParseAddr("127.61.0.1")})
	args := []string{"crawl", "--dir", r.dir, "--hosts", r.hosts, "--seeds", r.seeds, "--allow-private",
		"--system-dns=false", "--progress", "200ms", "--host-delay", hostDelay.String(), "--ip-delay", ipDelay.String(),
		"--retry-delay", "100ms", "--fetch-timeout", "10s"}

	// First run: stop it once a good part of the web is fetched.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, petrel, args...)
	var first bytes.Buffer
	cmd.Stderr = &first
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for len(r.web.Hits()) < 150 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("interrupted crawl: %v\n%s", err, first.String())
	}
	stoppedAt := len(r.web.Hits())
	expected := map[string]bool{}
	for _, u := range r.web.Expected() {
		expected[urlKey(t, u)] = true
	}
	if stoppedAt >= len(expected) {
		t.Fatalf("the first run fetched everything (%d requests) before the stop; the test proves nothing", stoppedAt)
	}

	// Second run: the same command resumes.
	if err := r.crawl(t, 2*time.Minute, "--host-delay", hostDelay.String(), "--ip-delay", ipDelay.String(),
		"--retry-delay", "100ms", "--fetch-timeout", "10s"); err != nil {
		t.Fatalf("resumed crawl: %v\n%s", err, r.stderr.String())
	}
	t.Logf("stopped after %d requests; %d in all", stoppedAt, len(r.web.Hits()))

	seen := map[string]int{}
	pages := 0
	for _, h := range r.web.Hits() {
		if h.Path == "/robots.txt" {
			continue
		}
		seen[key(h.Host, h.Path)]++
		pages++
	}
	for k := range expected {
		if seen[k] != 1 {
			t.Errorf("%s fetched %d times over the two runs, want 1", k, seen[k])
		}
	}
	for k := range seen {
		if !expected[k] {
			t.Errorf("unexpected fetch of %s", k)
		}
	}
	if !strings.Contains(first.String(), "crawl stopped after") || !strings.Contains(first.String(), " URLs queued; run the same command to resume") {
		t.Errorf("the interrupted run did not say it stopped and how to resume:\n%s", first.String())
	}
	if !strings.Contains(r.stderr.String(), "crawl total ") || !strings.Contains(r.stderr.String(), " over 2 runs") {
		t.Errorf("the resumed run's summary lacks the crawl's totals over both runs:\n%s", r.stderr.String())
	}
	events := eventLog(t, r.dir)
	for _, ev := range []string{`"msg":"crawl started"`, `"msg":"crawl stopped"`, `"msg":"crawl resumed"`, `"msg":"crawl finished"`} {
		if !strings.Contains(events, ev) {
			t.Errorf("the crawl log lacks %s", ev)
		}
	}

	// A third run of the same command: the crawl is complete, nothing is
	// fetched, and the message says how to start another.
	before := len(r.web.Hits())
	again := exec.Command(petrel, args...)
	var third bytes.Buffer
	again.Stderr = &third
	if err := again.Run(); err != nil {
		t.Errorf("re-run of a complete crawl: %v\n%s", err, third.String())
	}
	if !strings.Contains(third.String(), "is complete") || !strings.Contains(third.String(), "give a new --dir") {
		t.Errorf("re-run of a complete crawl said %q", third.String())
	}
	if n := len(r.web.Hits()); n != before {
		t.Errorf("re-run of a complete crawl made %d requests", n-before)
	}
	checkPoliteness(t, r.dir, r.web.Hits(), hostDelay, ipDelay)
	// Every page is in the WARC files of one run or the other; robots.txt
	// may have been fetched again by the second run (its cache is not kept).
	checkWARC(t, r.dir+"/warc", expected, len(r.web.Hits()))
}

// eventLog returns the crawl's JSON event log (logs/events.jsonl, or
// logs/crawl.log where the event log was kept before).
func eventLog(t *testing.T, dir string) string {
	t.Helper()
	for _, name := range []string{"events.jsonl", "crawl.log"} {
		if b, err := os.ReadFile(dir + "/logs/" + name); err == nil && bytes.Contains(b, []byte(`"msg":`)) {
			return string(b)
		}
	}
	t.Fatalf("no event log in %s/logs", dir)
	return ""
}
