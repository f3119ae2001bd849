package benchcrawl

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestPeers runs the Scrapy and the Crawlee crawler briefly, each in its
// namespace, on a tiny synthetic web served in this process, and checks
// that each fetched its pages and that its figures are reported, its
// politeness judged from the web's log. Without the tools it skips, saying
// how to install them, unless PETREL_REQUIRE_PEERS=1.
func TestPeers(t *testing.T) {
	require := os.Getenv("PETREL_REQUIRE_PEERS") == "1"
	skip := func(t *testing.T, why string) {
		t.Helper()
		if require {
			t.Fatal(why + " (PETREL_REQUIRE_PEERS=1)")
		}
		t.Skip(why)
	}
	if _, err := exec.LookPath("unshare"); err != nil || os.Geteuid() != 0 {
		skip(t, "the peers run in a private mount namespace: needs root and unshare")
	}
	scrapy := "apt-get install -y python3-scrapy"
	for i, tc := range []struct {
		peer    string
		run     func(context.Context, Options, *webProc, string) RunResult
		install string
		real    bool // the real shape: HTTPS with the web's CA
	}{
		{PeerScrapy, runScrapy, scrapy, false},
		{PeerCrawlee, runCrawlee, "npm install crawlee@3.18.1 in $PETREL_TOOLS_DIR (default /opt/petrel-tools)", false},
		// Scrapy's TLS trust is its own context factory: prove it trusts
		// the web's CA (Node's NODE_EXTRA_CA_CERTS is Node's own).
		{PeerScrapy, runScrapy, scrapy, true},
	} {
		name := tc.peer
		if tc.real {
			name += "-real"
		}
		// One after the other, as the harness runs them: every namespace
		// check listens on the one decoy name server address.
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			o, err := Options{Petrel: "unused", HostDelay: 10 * time.Millisecond, IPDelay: 5 * time.Millisecond,
				MaxURLs: 24, TimeBound: 15 * time.Second, Progress: 200 * time.Millisecond, Peers: []string{tc.peer},
				BenchDir: filepath.Join("..", "..", "bench")}.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			first := netip.AddrFrom4([4]byte{127, 207, byte(i), 1})
			web, stop := tinyWeb(t, first, filepath.Join(dir, "web"))
			minPages := int64(16)
			var tlsRequests func() int64
			if tc.real {
				web, stop, tlsRequests = tinyRealWeb(t, first, filepath.Join(dir, "web"))
				o.MaxURLs, minPages = 10, 1 // its purpose is the CA; some hosts fail or are down
			}
			res := tc.run(context.Background(), o, web, filepath.Join(dir, tc.peer))
			res.began, res.ended = time.Now().Add(-time.Hour), time.Now()
			res.finish()
			if strings.Contains(res.Skipped, "not installed") || strings.Contains(res.Skipped, "not importable") || strings.Contains(res.Skipped, "not found") {
				skip(t, tc.peer+": "+res.Skipped+"; install: "+tc.install)
			}
			if res.Skipped != "" || res.Error != "" {
				t.Fatalf("skipped %q, error %q; command %s", res.Skipped, res.Error, res.Command)
			}
			all := []RunResult{res}
			if err := judgePoliteness(all, stop(), o.HostDelay, o.IPDelay); err != nil {
				t.Fatal(err)
			}
			r := all[0]
			// 8 hosts of 6 pages, all reachable from the seeds; 24 at most
			// (Scrapy may overshoot).
			if r.Pages < minPages || r.PagesPerSec <= 0 || r.CPUSeconds <= 0 || r.CPUPer1000 <= 0 || r.PeakRSSBytes <= 0 || r.StoppedAtBound {
				t.Errorf("implausible figures: pages %d, %.1f/s, CPU %.2f s, peak RSS %d, stopped %v",
					r.Pages, r.PagesPerSec, r.CPUSeconds, r.PeakRSSBytes, r.StoppedAtBound)
			}
			if r.Politeness == nil || r.Politeness.Requests < r.Pages {
				t.Errorf("politeness: %+v for %d pages", r.Politeness, r.Pages)
			}
			if tlsRequests != nil && tlsRequests() == 0 {
				t.Error("no request over HTTPS: the web's CA was not trusted")
			}
			t.Logf("%s: %d pages in %.1f s, %.0f µs CPU a page, peak RSS %.0f MiB, violations host/IP %s of %d requests",
				tc.peer, r.Pages, r.ElapsedS, r.CPUPer1000*1000, float64(r.PeakRSSBytes)/(1<<20), r.Politeness, r.Politeness.Requests)
		})
	}
}

// tinyWeb serves a synthetic web of 8 hosts of 6 pages from first, with
// its files in dir; stop ends it and returns the path of its request log.
func tinyWeb(t *testing.T, first netip.Addr, dir string) (*webProc, func() string) {
	t.Helper()
	w, err := testweb.Start(context.Background(), testweb.Config{Hosts: 8, HostsPerIP: 4, PagesPerHost: 6, LinksPerPage: 8, FirstIP: first})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	hosts, seeds, err := w.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	web := &webProc{dir: dir, hostsPath: hosts, seedsPath: seeds}
	f, err := os.Open(hosts)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if web.hosts, err = parseHosts(f); err != nil {
		t.Fatal(err)
	}
	return web, func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := w.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "requests.jsonl")
		if err := w.WriteHitLog(path); err != nil {
			t.Fatal(err)
		}
		return path
	}
}

// tinyRealWeb serves a real-shaped web of 8 hosts of 5 pages from first
// (HTTPS on most, its CA in dir/ca.pem); stop ends it and returns the
// path of its request log; tlsRequests counts the requests over TLS.
func tinyRealWeb(t *testing.T, first netip.Addr, dir string) (web *webProc, stop func() string, tlsRequests func() int64) {
	t.Helper()
	w, err := testweb.StartGen(context.Background(), testweb.GenConfig{Hosts: 8, PagesPerHost: 5, Shape: testweb.ShapeReal, FirstIP: first},
		testweb.GenServeOptions{LogHits: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	seeds, _, err := w.WriteFiles(dir, 4)
	if err != nil {
		t.Fatal(err)
	}
	ca, hosts, err := w.WriteRealFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	web = &webProc{dir: dir, hostsPath: hosts, seedsPath: seeds, caPath: ca}
	f, err := os.Open(hosts)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if web.hosts, err = parseHosts(f); err != nil {
		t.Fatal(err)
	}
	return web, func() string {
			w.Close()
			path := filepath.Join(dir, "requests.jsonl")
			if err := w.WriteHitLog(path); err != nil {
				t.Fatal(err)
			}
			return path
		}, func() int64 {
			return w.Counts().TLS
		}
}
