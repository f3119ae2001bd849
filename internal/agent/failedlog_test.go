package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/frontier"
)

// TestAddSeedsOfKnownURLs offers, while a crawl runs, URLs the crawl knows
// already: one fetched (refused as known, not "accepted" and never
// fetched, as before) and one given up after its tries (its last outcome
// a failure, in state/failed: queued again past the sieve, and fetched).
func TestAddSeedsOfKnownURLs(t *testing.T) {
	var mu sync.Mutex
	hits := map[string]int{}
	hold := make(chan struct{})
	failing := true
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		fail := failing
		mu.Unlock()
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/":
			fmt.Fprint(w, `<a href=/fail.html>f</a> <a href=/hold.html>h</a>`)
		case "/fail.html":
			if fail {
				http.Error(w, "down", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprint(w, `<title>back</title>`)
		case "/hold.html":
			<-hold // keeps the crawl running until the test is done
			fmt.Fprint(w, `<title>held</title>`)
		}
	}))
	ln, err := net.Listen("tcp", "127.91.3.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	released := sync.OnceFunc(func() { close(hold) })
	defer released()
	dir := t.TempDir()
	hosts := filepath.Join(dir, "hosts")
	if err := os.WriteFile(hosts, []byte("127.91.3.1 known.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://known.test:%d/", ln.Addr().(*net.TCPAddr).Port)
	cfg := Defaults()
	cfg.Dir, cfg.SeedURLs = filepath.Join(dir, "crawl"), []string{base}
	cfg.Fetch.HostsFile, cfg.Fetch.AllowPrivate, cfg.Fetch.SystemDNS = hosts, true, false
	cfg.Frontier.HostDelay, cfg.Frontier.IPDelay = time.Millisecond, time.Millisecond
	cfg.Frontier.RetryDelay, cfg.Frontier.MaxRetries, cfg.Frontier.ParallelPerKey, cfg.Frontier.ParallelPerIP = time.Millisecond, 1, 2, 2
	cfg.Fetchers, cfg.Parsers, cfg.CheckpointEvery = 4, 2, 0
	a, err := Open(cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- a.Run(context.Background()) }()
	// Wait until /fail.html has used its tries and is in state/failed.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if a.failed.flush() == nil {
			if b, _ := os.ReadFile(filepath.Join(cfg.Dir, "state", failedFile)); strings.Contains(string(b), "fail.html") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("/fail.html not in state/failed")
		}
	}
	mu.Lock()
	failing = false
	mu.Unlock()
	res := a.AddSeeds([]string{base, base + "fail.html"})
	if r := res[0]; r.Accepted || !strings.Contains(r.Reason, "already known") {
		t.Errorf("a fetched seed offered again: %+v, want refused as already known", r)
	}
	if r := res[1]; !r.Accepted || !r.Requeued {
		t.Errorf("a URL given up offered again: %+v, want requeued", r)
	}
	// The crawl cannot end before the URL requeued is fetched.
	released()
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if hits["/fail.html"] != 3 || hits["/"] != 1 {
		t.Errorf("requests %v, want / once and /fail.html three times (two tries, then once requeued)", hits)
	}
}

// TestFailedRecordReadBack writes the failed-URL record as a crawl does
// (a URL failed, requeued, failed again; another requeued; a line cut
// short by a crash) and reads back the URLs whose last line is a failure,
// with the Meta they were found with.
func TestFailedRecordReadBack(t *testing.T) {
	state := t.TempDir()
	l, err := openFailedLog(state, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	m := frontier.Meta{Seed: 3, Depth: 2}
	l.add("host-down", "http://a.test/1", m)
	l.add("retries-exhausted", "http://a.test/2", frontier.Meta{})
	l.add(requeuedReason, "http://a.test/1", m)
	l.add(requeuedReason, "http://a.test/2", frontier.Meta{})
	l.add("broken-host", "http://a.test/2", frontier.Meta{})
	l.add("dns", "http://b.test/", frontier.Meta{})
	if n, _, err := l.close(); err != nil || n != 4 {
		t.Fatalf("close: %d failures, want 4 (%v)", n, err)
	}
	f, _ := os.OpenFile(filepath.Join(state, failedFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("host-down\t0102")
	f.Close()
	urls, bad, err := readFailed(filepath.Join(state, failedRetryFile), filepath.Join(state, failedFile))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range urls {
		got = append(got, u.reason+" "+string(u.rec[frontier.MetaLen:]))
	}
	if want := []string{"broken-host http://a.test/2", "dns http://b.test/"}; !slices.Equal(got, want) || bad != 1 {
		t.Errorf("read back %q (%d bad lines), want %q (1 bad)", got, bad, want)
	}
	if err := moveFailed(state); err != nil {
		t.Fatal(err)
	}
	again, _, err := readFailed(filepath.Join(state, failedRetryFile), filepath.Join(state, failedFile))
	if err != nil || len(again) != 2 {
		t.Errorf("after the move to %s: %d URLs (%v), want 2", failedRetryFile, len(again), err)
	}
	if _, err := os.Stat(filepath.Join(state, failedFile)); !os.IsNotExist(err) {
		t.Errorf("%s still there after the move: %v", failedFile, err)
	}
}
