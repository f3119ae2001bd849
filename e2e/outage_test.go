package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// outageWeb is a synthetic web on a fixed port, so that it can be stopped
// (its addresses then refuse connections) and started again with the
// same URLs; hits gathers the requests of each of its lives.
type outageWeb struct {
	cfg  testweb.Config
	web  *testweb.Web
	hits []testweb.Hit
}

func startOutageWeb(t *testing.T, cfg testweb.Config) *outageWeb {
	t.Helper()
	w := &outageWeb{cfg: cfg}
	w.start(t)
	t.Cleanup(func() { w.stop(t) })
	return w
}

func (w *outageWeb) start(t *testing.T) {
	t.Helper()
	web, err := testweb.Start(context.Background(), w.cfg)
	if err != nil {
		t.Fatalf("testweb: %v", err)
	}
	w.web = web
}

// stop closes the web, its addresses then refusing connections.
func (w *outageWeb) stop(t *testing.T) {
	t.Helper()
	if w.web == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	w.web.Shutdown(ctx)
	w.hits = append(w.hits, w.web.Hits()...)
	w.web = nil
}

// allHits returns the requests of every life of the web so far.
func (w *outageWeb) allHits() []testweb.Hit {
	h := append([]testweb.Hit(nil), w.hits...)
	if w.web != nil {
		h = append(h, w.web.Hits()...)
	}
	return h
}

// waitHits waits until the web's current life has answered n requests.
func (w *outageWeb) waitHits(t *testing.T, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for len(w.web.Hits()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the web answered %d requests in %s, want %d", len(w.web.Hits()), within, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// outageCrawl starts petrel crawl on w's files in dir, with extra flags.
func outageCrawl(t *testing.T, w *outageWeb, dir string, stderr *bytes.Buffer, extra ...string) (*exec.Cmd, context.CancelFunc) {
	t.Helper()
	files := t.TempDir()
	hosts, seeds, err := w.web.WriteFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	args := append([]string{"crawl", "--dir", dir, "--hosts", hosts, "--seeds", seeds, "--allow-private",
		"--system-dns=false", "--progress", "1s", "--fetchers", "16", "--host-delay", "30ms", "--ip-delay", "10ms",
		"--retry-delay", "50ms", "--fetch-timeout", "5s"}, extra...)
	cmd := exec.CommandContext(ctx, petrel, args...)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	return cmd, cancel
}

// expectedFetched reports the URLs of w expected and never fetched with a
// response.
func expectedMissing(t *testing.T, w *outageWeb, hits []testweb.Hit) []string {
	t.Helper()
	seen := map[string]bool{}
	for _, h := range hits {
		if h.Status > 0 {
			seen[key(h.Host, h.Path)] = true
		}
	}
	var missing []string
	for _, u := range w.web.Expected() {
		if !seen[urlKey(t, u)] {
			missing = append(missing, u)
		}
	}
	return missing
}

// skippedByReason reads logs/skipped.jsonl of dir: URL → reasons.
func skippedByReason(t *testing.T, dir string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	f, err := os.Open(filepath.Join(dir, "logs", "skipped.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var s struct{ URL, Reason string }
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("skipped.jsonl: %v: %s", err, sc.Text())
		}
		out[s.URL] = append(out[s.URL], s.Reason)
	}
	return out
}

// TestOutageNothingLost stops every server of a synthetic web for three
// seconds in the middle of a crawl with a short host delay: the hosts
// refuse connections, back off (doubling, up to --host-down-backoff),
// keep their URLs, and fetch every page once the servers are back. No
// URL is given up, and politeness holds across the outage.
func TestOutageNothingLost(t *testing.T) {
	w := startOutageWeb(t, testweb.Config{Hosts: 4, HostsPerIP: 2, PagesPerHost: 25, Seed: 25,
		FirstIP: netip.MustParseAddr("127.68.0.1"), Port: 18725})
	dir := filepath.Join(t.TempDir(), "crawl")
	var stderr bytes.Buffer
	cmd, cancel := outageCrawl(t, w, dir, &stderr, "--host-down-backoff", "400ms", "--host-down-give-up", "1m")
	defer cancel()
	w.waitHits(t, 20, 30*time.Second)
	w.stop(t)
	time.Sleep(3 * time.Second)
	w.start(t)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("petrel crawl: %v\n%s", err, stderr.String())
	}
	hits := w.allHits()
	if missing := expectedMissing(t, w, hits); len(missing) > 0 {
		t.Errorf("%d of %d pages never fetched across the outage, e.g. %s", len(missing), len(w.web.Expected()), missing[0])
	}
	st := readStats(t, dir)
	if st["HostDownWaits"] == 0 {
		t.Error("HostDownWaits is 0: no try met the outage")
	}
	if st["PurgedURLs"] != 0 {
		t.Errorf("%d URLs purged", st["PurgedURLs"])
	}
	for u, rs := range skippedByReason(t, dir) {
		for _, r := range rs {
			if r == "host-down" || r == "broken-host" || r == "retries-exhausted" {
				t.Errorf("%s given up (%s)", u, r)
			}
		}
	}
	checkPoliteness(t, dir, hits, 30*time.Millisecond, 10*time.Millisecond)
	t.Logf("%d requests, %d tries met the outage", len(hits), st["HostDownWaits"])
}

// TestOutageGiveUpAndRetryFailed stops the web for good in the middle of
// a crawl: the hosts are given up after --host-down-give-up, and every
// URL dropped with them is in logs/skipped.jsonl (host-down) and in
// state/failed. The web back, `petrel crawl --retry-failed` fetches them:
// every page is fetched across the two runs.
func TestOutageGiveUpAndRetryFailed(t *testing.T) {
	w := startOutageWeb(t, testweb.Config{Hosts: 2, HostsPerIP: 1, PagesPerHost: 25, Seed: 26,
		FirstIP: netip.MustParseAddr("127.68.1.1"), Port: 18726})
	dir := filepath.Join(t.TempDir(), "crawl")
	var stderr bytes.Buffer
	cmd, cancel := outageCrawl(t, w, dir, &stderr, "--host-down-backoff", "200ms", "--host-down-give-up", "2s")
	defer cancel()
	w.waitHits(t, 8, 30*time.Second)
	w.stop(t)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("petrel crawl: %v\n%s", err, stderr.String())
	}
	w.start(t)
	missing := expectedMissing(t, w, w.allHits())
	if len(missing) == 0 {
		t.Fatal("every page was fetched before the web stopped: the test did not test")
	}
	skipped := skippedByReason(t, dir)
	known := crawlLogURLs(t, dir)
	given := 0
	for _, u := range missing {
		if !known[u] {
			continue // never found: no fetched page linked to it
		}
		given++
		if rs := skipped[u]; len(rs) == 0 {
			t.Errorf("%s was given up, and skipped.jsonl does not say so", u)
		}
	}
	if given == 0 {
		t.Fatal("no URL known to the crawl was given up")
	}
	if !strings.Contains(stderr.String(), "its host cannot be reached (refused)") {
		t.Errorf("stderr does not say a seed's host cannot be reached:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "--retry-failed fetches them again") {
		t.Errorf("the summary does not say how to fetch again what was given up:\n%s", stderr.String())
	}
	failed, err := os.ReadFile(filepath.Join(dir, "state", "failed"))
	if err != nil || !bytes.Contains(failed, []byte("host-down\t")) {
		t.Errorf("state/failed holds no host-down URL (%v):\n%s", err, failed)
	}

	var stderr2 bytes.Buffer
	cmd, cancel2 := outageCrawl(t, w, dir, &stderr2, "--retry-failed")
	defer cancel2()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("petrel crawl --retry-failed: %v\n%s", err, stderr2.String())
	}
	if !strings.Contains(stderr2.String(), "--retry-failed:") {
		t.Errorf("the retry does not say what it queued:\n%s", stderr2.String())
	}
	if missing := expectedMissing(t, w, w.allHits()); len(missing) > 0 {
		t.Errorf("%d pages never fetched after --retry-failed, e.g. %s\n%s", len(missing), missing[0], stderr2.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "failed.retry")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state/failed.retry left after a clean close: %v", err)
	}
}

// crawlLogURLs returns the URLs logs/crawl.log of dir has a line of.
func crawlLogURLs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "logs", "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 3 {
			out[f[3]] = true
		}
	}
	return out
}

// TestAllSeedsFailedExitsOne crawls two seeds that cannot be fetched: a
// loopback address without --allow-private, and a name the hosts file
// does not hold. The crawl is a failure: exit 1, each seed's reason on
// stderr, and the directory not marked complete (the same command runs
// again).
func TestAllSeedsFailedExitsOne(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "crawl")
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("127.68.2.1 known.petrel.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, petrel, "crawl", "--dir", dir, "--hosts", hosts, "--system-dns=false",
		"--host-delay", "10ms", "http://127.68.2.1:18727/", "http://nowhere.petrel.test/")
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1; stderr:\n%s", err, stderr.String())
	}
	for _, want := range []string{
		"no seed was fetched",
		"seed http://127.68.2.1:18727/: its address is loopback, private or link-local (give --allow-private",
		"seed http://nowhere.petrel.test/: its host name did not resolve",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "COMPLETE")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the directory is marked complete (%v)", err)
	}
}
