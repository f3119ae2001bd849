package agent

import (
	"context"
	"io"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// testCrawl is one in-process crawl of a small synthetic web.
type testCrawl struct {
	web *testweb.Web
	cfg Config
	a   *Agent
}

// newTestCrawl starts a synthetic web of hosts×pages on addresses from
// firstIP and opens an agent on it with fast delays; edit changes the
// configuration before Open.
func newTestCrawl(t *testing.T, firstIP string, hosts, pages int, edit func(*Config, *testweb.Web)) *testCrawl {
	t.Helper()
	w, dir, hostsFile, seeds := startTestWeb(t, testweb.Config{Hosts: hosts, HostsPerIP: 2, PagesPerHost: pages, Seed: 3,
		FirstIP: netip.MustParseAddr(firstIP)})
	cfg := testConfig(filepath.Join(dir, "crawl"), hostsFile, seeds)
	if edit != nil {
		edit(&cfg, w)
	}
	a, err := Open(cfg, io.Discard)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return &testCrawl{web: w, cfg: cfg, a: a}
}

// startTestWeb starts the synthetic web wc until the test ends and writes
// its hosts file and seeds into a new temporary directory, dir.
func startTestWeb(t *testing.T, wc testweb.Config) (w *testweb.Web, dir, hostsFile, seeds string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := testweb.Start(ctx, wc)
	if err != nil {
		t.Fatalf("testweb: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	dir = t.TempDir()
	if hostsFile, seeds, err = w.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	return w, dir, hostsFile, seeds
}

// testConfig is the tests' configuration of a crawl in dir of the web
// whose hosts file and seeds are given: fast delays, no checkpoints.
func testConfig(dir, hostsFile, seeds string) Config {
	cfg := Defaults()
	cfg.Dir = dir
	cfg.Fetch.HostsFile, cfg.SeedsFile = hostsFile, seeds
	cfg.Fetch.AllowPrivate, cfg.Fetch.SystemDNS = true, false
	cfg.Frontier.HostDelay, cfg.Frontier.IPDelay = 5*time.Millisecond, 2*time.Millisecond
	cfg.Fetchers, cfg.Parsers = 16, 2
	cfg.Frontier.RetryDelay = 50 * time.Millisecond
	cfg.Fetch.Timeout = 10 * time.Second
	cfg.CheckpointEvery = 0
	cfg.Frontier.WorkbenchBytes, cfg.Sieve.URLCacheBytes, cfg.Sieve.BufferKeys = 16<<20, 1<<20, 1<<12
	return cfg
}

// run crawls to the end (or fails the test after a minute).
func (c *testCrawl) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.a.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the crawl did not finish within a minute")
	}
}
