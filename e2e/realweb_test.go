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
	w, err := testweb.StartGen(ctx, testweb.GenConfig{Shape: testweb.ShapeReal, Hosts: 40, PagesPerHost: 6, Seed: 11,
		FirstIP: netip.MustParseAddr("127.97.0.1")}, testweb.GenServeOptions{LogHits: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	dir := t.TempDir()
	seeds, _, err := w.WriteFiles(dir, 8)
	if err != nil {
		t.Fatal(err)
	}
	ca, hosts, err := w.WriteRealFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, ok := w.Gen().Reach(8, 5000)
	if !ok || len(want) < 100 {
		t.Fatalf("the web reaches %d pages (complete %v): not a useful test", len(want), ok)
	}
	cctx, ccancel := context.WithTimeout(ctx, 3*time.Minute)
	defer ccancel()
	var stderr bytes.Buffer
	// The build without -race: pages of real size parse slowly under the
	// race detector, and this test judges what was fetched, not races.
	cmd := exec.CommandContext(cctx, clusterPetrel, "crawl", "--dir", filepath.Join(dir, "crawl"), "--hosts", hosts, "--seeds", seeds,
		"--ca-file", ca, "--allow-private", "--system-dns=false", "--host-delay", "20ms", "--ip-delay", "5ms",
		"--retries", "1", "--retry-delay", "100ms", "--progress", "1s")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("crawl: %v\n%s", err, stderr.String())
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
	st := readStats(t, filepath.Join(dir, "crawl"))
	if st["TLSVerified"] == 0 {
		t.Errorf("no certificate verified (stats %v)", st)
	}
}
