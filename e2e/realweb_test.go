package e2e

import (
	"bytes"
	"context"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestCrawlRealShape crawls a small web of the real shape (HTTPS with the
// web's own certificate authority given by --ca-file, TLS 1.2 and 1.3,
// HTTP/2 offered, compressed pages of real sizes, redirects http → https
// and bare → www, latency, failing and down hosts) and judges it from the
// web's own request log: every page a correct crawler reaches is fetched
// and answered 200, no /private/ page is requested, and pages were
// fetched over TLS, compressed and through redirects.
func TestCrawlRealShape(t *testing.T) {
	t.Parallel() // judges coverage only, with the build without -race: see the package doc
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := crawlRealWeb(t, ctx, testweb.GenConfig{Hosts: 40, PagesPerHost: 6, Seed: 11, FirstIP: netip.MustParseAddr("127.97.0.1")},
		"--host-delay", "20ms", "--ip-delay", "5ms", "--retries", "1", "--retry-delay", "100ms")
	if r.err != nil {
		return
	}
	w, dir := r.web, r.dir
	want, ok := w.Gen().Reach(8, 5000)
	if !ok || len(want) < 100 {
		t.Fatalf("the web reaches %d pages (complete %v): not a useful test", len(want), ok)
	}
	got := map[string]int{}
	for _, h := range w.Hits() {
		if strings.HasPrefix(h.Path, "/private/") {
			t.Errorf("robots.txt disallows %s%s, fetched", h.Host, h.Path)
		}
		if h.Status == 200 {
			got[key(h.Host, h.Path)]++
		}
	}
	missed := 0
	for _, u := range want {
		if got[urlKey(t, u)] == 0 {
			missed++
			if missed <= 5 {
				t.Errorf("%s not fetched", u)
			}
		}
	}
	if missed > 0 {
		t.Errorf("%d of %d reachable pages not fetched", missed, len(want))
	}
	c := w.Counts()
	t.Logf("%d reachable pages; web counts %+v", len(want), c)
	if c.TLS == 0 || c.Redirects == 0 || c.Gzip+c.Brotli == 0 || c.Failures == 0 {
		t.Errorf("the crawl did not meet the shape: counts %+v", c)
	}
	st := readStats(t, dir)
	if st["TLSVerified"] == 0 {
		t.Errorf("no certificate verified (stats %v)", st)
	}
	checkPoliteness(t, dir, w.Hits(), 20*time.Millisecond, 5*time.Millisecond)
}

// TestCrawlTLSResumption crawls a small web of the real shape keeping one
// idle connection only, so that a host's later requests open connections
// again: they resume the host's TLS session (a ticket) instead of a full
// handshake, and every request keeps the host's and the address's delays
// by the web's own log.
func TestCrawlTLSResumption(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const hostDelay, ipDelay = 30 * time.Millisecond, 5 * time.Millisecond // Seed 10: no slow host
	r := crawlRealWeb(t, ctx, testweb.GenConfig{Hosts: 16, PagesPerHost: 4, Seed: 10, FirstIP: netip.MustParseAddr("127.98.0.1")},
		"--host-delay", hostDelay.String(), "--ip-delay", ipDelay.String(), "--retries", "1", "--retry-delay", "100ms", "--max-idle-conns", "1")
	if r.err != nil {
		return
	}
	st := readStats(t, r.dir)
	if st["TLSResumed"] == 0 || st["TLSFull"] == 0 {
		t.Errorf("handshakes full %d, resumed %d: want both (stats %v)", st["TLSFull"], st["TLSResumed"], st)
	}
	t.Logf("connections opened %d, TLS full %d, resumed %d, reused %d", st["ConnsOpened"], st["TLSFull"], st["TLSResumed"], st["ConnsReused"])
	checkPoliteness(t, r.dir, r.web.Hits(), hostDelay, ipDelay)
}

// realCrawl is a crawl of a small web of the real shape.
type realCrawl struct {
	web *testweb.GenWeb
	dir string // the crawl's directory
	err error  // of petrel crawl, with its stderr
}

// crawlRealWeb serves a web of the real shape (hosts × pages, seed, from
// firstIP) and crawls it with the build without -race (pages of real size
// parse slowly under the race detector), the web's certificate authority
// given by --ca-file and its names by --hosts; extra are more flags.
func crawlRealWeb(t *testing.T, ctx context.Context, cfg testweb.GenConfig, extra ...string) *realCrawl {
	t.Helper()
	cfg.Shape = testweb.ShapeReal
	w, err := testweb.StartGen(ctx, cfg, testweb.GenServeOptions{LogHits: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	dir := t.TempDir()
	seeds, _, err := w.WriteFiles(dir, 8)
	if err != nil {
		t.Fatal(err)
	}
	ca, hosts, err := w.WriteRealFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := &realCrawl{web: w, dir: filepath.Join(dir, "crawl")}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(cctx, petrel, append([]string{"crawl", "--dir", r.dir, "--hosts", hosts, "--seeds", seeds,
		"--ca-file", ca, "--allow-private", "--system-dns=false", "--progress", "1s"}, extra...)...)
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		r.err = err
		t.Errorf("crawl: %v\n%s", err, stderr.String())
	}
	t.Logf("crawl %v took %v; web counts %+v", extra, time.Since(start), w.Counts())
	return r
}
