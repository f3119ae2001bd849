package agent

import (
	"context"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestMaxURLsOverRuns: --max-urls bounds the crawl, not each run: four
// runs of the same command with --max-urls 3 fetch 3 pages in all, and
// raising it lets the next run go on by the difference.
func TestMaxURLsOverRuns(t *testing.T) {
	w, dir, hostsFile, seeds := startTestWeb(t, testweb.Config{Hosts: 3, HostsPerIP: 1, PagesPerHost: 10, Seed: 5,
		FirstIP: netip.MustParseAddr("127.61.12.1")})
	cfg := testConfig(filepath.Join(dir, "crawl"), hostsFile, seeds)
	pages := func() int {
		n := 0
		for _, h := range w.Hits() {
			if h.Path != "/robots.txt" {
				n++
			}
		}
		return n
	}
	run := func(max int64) {
		t.Helper()
		cfg.Frontier.MaxURLs = max
		a, err := Open(cfg, io.Discard)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := a.Run(ctx); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if got := a.runOutcome(); got != "limit" {
			t.Errorf("run with --max-urls %d ended %q, want limit", max, got)
		}
		if s := a.summary(a.stats.Snapshot()); !strings.Contains(s, "raise --max-urls") {
			t.Errorf("summary does not tell to raise --max-urls:\n%s", s)
		}
	}
	for i := range 4 {
		run(3)
		if got := pages(); got != 3 {
			t.Fatalf("after run %d with --max-urls 3: %d pages fetched in all, want 3", i+1, got)
		}
	}
	run(5)
	if got := pages(); got != 5 {
		t.Fatalf("after a run with --max-urls 5: %d pages fetched in all, want 5", got)
	}
}

// TestResumeLine: a resumed run says so on its progress writer in one
// line: its run, the pages so far, the URLs queued, and the settings
// changed while the crawl ran that are kept instead of the flags.
func TestResumeLine(t *testing.T) {
	_, dir, hostsFile, seeds := startTestWeb(t, testweb.Config{Hosts: 2, HostsPerIP: 1, PagesPerHost: 10, Seed: 5,
		FirstIP: netip.MustParseAddr("127.61.12.20")})
	cfg := testConfig(filepath.Join(dir, "crawl"), hostsFile, seeds)
	cfg.Frontier.MaxURLs = 3
	run := func(progress io.Writer) {
		t.Helper()
		a, err := Open(cfg, progress)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := a.Run(ctx); err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
	var first strings.Builder
	run(&first)
	if strings.Contains(first.String(), "resumed") {
		t.Errorf("a first run says it resumed:\n%s", first.String())
	}
	live := filepath.Join(cfg.Dir, "state", liveFile)
	if err := os.WriteFile(live, []byte(`{"host-delay": "7ms"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var second strings.Builder
	run(&second)
	line, _, _ := strings.Cut(second.String(), "\n")
	for _, want := range []string{"resumed (run 2)", "3 pages so far", "URLs queued", "--host-delay 7ms"} {
		if !strings.Contains(line, want) {
			t.Errorf("the resumed run's first line %q lacks %q", line, want)
		}
	}
}
