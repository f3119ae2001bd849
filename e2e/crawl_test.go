package e2e

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gowarc "github.com/nlnwa/gowarc/v3"

	"github.com/petrel-crawler/petrel/internal/crawllog"
	"github.com/petrel-crawler/petrel/internal/testweb"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// crawlRun is one petrel crawl of a synthetic web: served in this
// process (web), or by a process of its own (ext; see webProc).
type crawlRun struct {
	web    *testweb.Web
	ext    *webProc
	dir    string
	hosts  string
	seeds  string
	bin    string // the command crawl runs; petrel when empty
	stderr bytes.Buffer
}

func startWeb(t *testing.T, cfg testweb.Config) *crawlRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := testweb.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("testweb: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	dir := t.TempDir()
	hosts, seeds, err := w.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &crawlRun{web: w, dir: filepath.Join(dir, "crawl"), hosts: hosts, seeds: seeds}
}

// crawl runs petrel crawl with the standard test flags plus extra, and
// returns its exit error.
func (r *crawlRun) crawl(t *testing.T, timeout time.Duration, extra ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args := append([]string{"crawl", "--dir", r.dir, "--hosts", r.hosts, "--seeds", r.seeds,
		"--allow-private", "--system-dns=false", "--progress", "1s"}, extra...)
	bin := r.bin
	if bin == "" {
		bin = petrel
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stderr = &r.stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("petrel crawl did not finish within %s; stderr:\n%s", timeout, r.stderr.String())
	}
	return err
}

// key identifies a request by host name and path+query (the synthetic
// web's log does not know the port).
func key(host, pathQuery string) string { return host + " " + pathQuery }

func urlKey(t *testing.T, raw string) string {
	u, err := urlx.Parse(raw)
	if err != nil {
		t.Fatalf("parse %q: %v", raw, err)
	}
	return key(u.Hostname(), u.PathQuery)
}

// TestCrawlSyntheticWeb is the foundation's end-to-end test: every
// reachable allowed page fetched exactly once, nothing disallowed fetched,
// no politeness violation per host and per IP, every fetch in the WARC with
// a correct digest, read back with gowarc.
//
// It runs twice: with the defaults, and with a workbench budget so small
// that the visit states' queues are virtualized to disk, a front of 4
// visit states that must grow, and RAM for 2 robots.txt states (the others
// answered from the robots store: still one robots.txt per host).
func TestCrawlSyntheticWeb(t *testing.T) {
	t.Run("default", func(t *testing.T) { crawlSyntheticWeb(t, "127.60.0.1") })
	t.Run("virtualized", func(t *testing.T) {
		r := crawlSyntheticWeb(t, "127.60.1.1", "--workbench-bytes", "1024", "--front-size", "4", "--robots-cache", "2")
		st := readStats(t, r.dir)
		if st["VirtualizedTotal"] < 100 {
			t.Errorf("only %d URLs were virtualized: the budget did not force virtualization", st["VirtualizedTotal"])
		}
		if st["RobotsLoaded"] == 0 {
			t.Error("no robots.txt state read back from the robots store: RAM held them all")
		}
	})
}

// readStats reads the counters a finished crawl left in state/stats.json.
func readStats(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "state", "stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]int64
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func crawlSyntheticWeb(t *testing.T, firstIP string, extra ...string) *crawlRun {
	const hostDelay, ipDelay = 50 * time.Millisecond, 25 * time.Millisecond
	r := startWeb(t, testweb.Config{Hosts: 32, HostsPerIP: 4, PagesPerHost: 20, Seed: 7, FirstIP: netip.MustParseAddr(firstIP)})
	r.bin = racePetrel
	err := r.crawl(t, 3*time.Minute, append([]string{"--host-delay", hostDelay.String(), "--ip-delay", ipDelay.String(),
		"--fetchers", "64", "--retry-delay", "100ms", "--fetch-timeout", "10s"}, extra...)...)
	if err != nil {
		t.Fatalf("petrel crawl: %v\n%s", err, r.stderr.String())
	}
	hits := r.web.Hits()
	t.Logf("%d requests logged by the synthetic web; petrel said:\n%s", len(hits), r.stderr.String())

	// Exactly once, and nothing else.
	expected := map[string]bool{}
	for _, u := range r.web.Expected() {
		expected[urlKey(t, u)] = true
	}
	if len(expected) < 300 {
		t.Fatalf("synthetic web too small for the test: %d expected URLs", len(expected))
	}
	seen := map[string]int{}
	for _, h := range hits {
		if h.Path == "/robots.txt" {
			continue
		}
		seen[key(h.Host, h.Path)]++
	}
	for k := range expected {
		if seen[k] != 1 {
			t.Errorf("expected URL %s fetched %d times, want 1", k, seen[k])
		}
	}
	for k, n := range seen {
		if !expected[k] {
			t.Errorf("unexpected fetch of %s (%d times)", k, n)
		}
	}
	for _, u := range r.web.Disallowed() {
		if n := seen[urlKey(t, u)]; n > 0 {
			t.Errorf("robots-disallowed URL %s fetched %d times", u, n)
		}
	}
	// robots.txt first on every host, once.
	firstReq := map[string]string{}
	robots := map[string]int{}
	for _, h := range hits {
		if _, ok := firstReq[h.Host]; !ok {
			firstReq[h.Host] = h.Path
		}
		if h.Path == "/robots.txt" {
			robots[h.Host]++
		}
	}
	for host, p := range firstReq {
		if p != "/robots.txt" {
			t.Errorf("host %s: first request %s, want /robots.txt", host, p)
		}
		if robots[host] != 1 {
			t.Errorf("host %s: robots.txt fetched %d times, want 1", host, robots[host])
		}
	}

	checkPoliteness(t, r.dir, hits, hostDelay, ipDelay)
	checkWARC(t, filepath.Join(r.dir, "warc"), expected, len(hits))
	if !strings.Contains(r.stderr.String(), "crawl finished") {
		t.Errorf("no summary on stderr:\n%s", r.stderr.String())
	}
	return r
}

// tolerance is what checkPoliteness allows only after an exchange the
// client cut short (Hit.Cut): the server may note a write between the
// client's close and its seeing it. Otherwise the server's log cannot show
// a gap shorter than the real one (see testweb's stamp.go: Start never
// precedes the request, End never follows the response's last byte), and
// every gap must be the full delay.
const tolerance = 8 * time.Millisecond

// checkPoliteness asserts, from the server's log, that requests to one host
// (and to one IP) never overlap and are separated by at least the delay
// (less tolerance after a Cut exchange). A violation is reported with the
// crawler's own view of the two fetches, from the crawl.log of dir.
func checkPoliteness(t *testing.T, dir string, hits []testweb.Hit, hostDelay, ipDelay time.Duration) {
	t.Helper()
	checkPolitenessWithin(t, hits, hostDelay, ipDelay, tolerance, dir)
}

// checkPolitenessWithin is checkPoliteness with another tolerance, and the
// crawl.log of each of dirs for the crawler's view.
func checkPolitenessWithin(t *testing.T, hits []testweb.Hit, hostDelay, ipDelay, tolerance time.Duration, dirs ...string) {
	t.Helper()
	var cv *crawlerView
	per := map[string]int{}
	for _, g := range politenessGaps(hits, hostDelay, ipDelay, tolerance) {
		if per[g.What]++; per[g.What] <= 3 {
			if cv == nil {
				cv = readCrawlerView(dirs)
			}
			t.Errorf("%s: %s started %v after the end of %s (delay %v); %s", g.What, g.Next.Path, g.Gap, g.Prev.Path, g.Delay, cv.gap(g.Prev, g.Next))
		}
	}
	for what, n := range per {
		if n > 3 {
			t.Errorf("%s: %d politeness violations in all", what, n)
		}
	}
}

// politenessGaps returns the politeness violations in a server's log (see
// testweb.PolitenessGaps).
func politenessGaps(hits []testweb.Hit, hostDelay, ipDelay, tolerance time.Duration) []testweb.Gap {
	return testweb.PolitenessGaps(hits, hostDelay, ipDelay, tolerance)
}

// crawlerView is the crawler's record of its fetches: crawl.log's start
// and duration (milliseconds) of each, by host and path+query.
type crawlerView struct {
	fetches map[string][]crawllog.Line
	err     error
}

func readCrawlerView(dirs []string) *crawlerView {
	cv := &crawlerView{fetches: map[string][]crawllog.Line{}}
	var files []string
	for _, d := range dirs {
		files = append(files, crawllog.Files(filepath.Join(d, "logs", "crawl.log"))...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			cv.err = err
			return cv
		}
		for _, s := range strings.Split(string(b), "\n") {
			l, err := crawllog.Parse(s)
			if err != nil || l.Start.IsZero() {
				continue
			}
			if u, err := urlx.Parse(l.URL); err == nil {
				k := key(u.Hostname(), u.PathQuery)
				cv.fetches[k] = append(cv.fetches[k], l)
			}
		}
	}
	return cv
}

// gap says when the crawler ended fetch a and began fetch b (the last of
// each in its log, wall clock to the millisecond).
func (cv *crawlerView) gap(a, b testweb.Hit) string {
	if cv.err != nil {
		return "crawl.log: " + cv.err.Error()
	}
	la, lb := cv.fetches[key(a.Host, a.Path)], cv.fetches[key(b.Host, b.Path)]
	if len(la) == 0 || len(lb) == 0 {
		return "no crawl.log of the crawler has both"
	}
	end, start := la[len(la)-1].Start.Add(la[len(la)-1].Duration), lb[len(lb)-1].Start
	return fmt.Sprintf("the crawler's crawl.log: first ended %s, second began %s (%v later)",
		end.Format("15:04:05.000"), start.Format("15:04:05.000"), start.Sub(end))
}

// checkWARC reads every WARC file back with gowarc: the digests gowarc
// validates must hold, the payload digest must match the payload, every
// expected URL must have a response (or revisit) record, and there must be
// one request record per request the server logged.
func checkWARC(t *testing.T, dir string, expected map[string]bool, requests int) {
	t.Helper()
	checkWARCRequests(t, dir, expected, requests, requests)
}

// checkWARCRequests is checkWARC with between minReq and maxReq request
// records.
func checkWARCRequests(t *testing.T, dir string, expected map[string]bool, minReq, maxReq int) {
	t.Helper()
	stored := map[string]bool{}
	nreq := 0
	eachWARCRecord(t, dir, func(f string, rec gowarc.Record) {
		wr := rec.WarcRecord
		for _, v := range rec.Validation {
			t.Errorf("%s offset %d: %v", f, rec.Offset, v)
		}
		h := wr.WarcHeader()
		switch wr.Type() {
		case gowarc.Request:
			nreq++
		case gowarc.Response:
			uri := h.Get(gowarc.WarcTargetURI)
			stored[urlKey(t, uri)] = true
			blk, ok := wr.Block().(gowarc.HttpResponseBlock)
			if !ok {
				t.Fatalf("%s: response block is %T", uri, wr.Block())
			}
			pr, err := blk.PayloadBytes()
			if err != nil {
				t.Fatal(err)
			}
			sum := sha1.New()
			if _, err := io.Copy(sum, pr); err != nil {
				t.Fatal(err)
			}
			want := "sha1:" + base32.StdEncoding.EncodeToString(sum.Sum(nil))
			if got := h.Get(gowarc.WarcPayloadDigest); got != want {
				t.Errorf("%s: WARC-Payload-Digest %s, payload hashes to %s", uri, got, want)
			}
		case gowarc.Revisit:
			stored[urlKey(t, h.Get(gowarc.WarcTargetURI))] = true
		}
	})
	for k := range expected {
		if !stored[k] {
			t.Errorf("fetched URL %s has no response record", k)
		}
	}
	switch {
	case minReq == maxReq && nreq != maxReq:
		t.Errorf("%d request records, the server logged %d requests", nreq, maxReq)
	case nreq < minReq || nreq > maxReq:
		t.Errorf("%d request records, want %d to %d (the server logged %d requests)", nreq, minReq, maxReq, maxReq)
	}
}

// warcReading serializes gowarc's readers across parallel tests: opening
// one sets a global of the uuid package (EnableRandPool) unguarded.
var warcReading sync.Mutex

// eachWARCRecord reads every WARC file of dir with gowarc (not with
// Petrel's own code) and calls fn for each record.
func eachWARCRecord(t *testing.T, dir string, fn func(file string, rec gowarc.Record)) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if len(files) == 0 {
		t.Fatalf("no WARC files in %s", dir)
	}
	warcReading.Lock()
	defer warcReading.Unlock()
	for _, f := range files {
		rd, err := gowarc.NewWarcFileReader(f, 0)
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := rd.Next()
			if err == io.EOF { // a wrapped io.EOF is an error about a record
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			fn(f, rec)
			rec.Close()
		}
		rd.Close()
	}
}

// TestBadInputExitsTwo checks that broken inputs are refused with exit code
// 2 and a message naming the problem, before any fetching.
func TestBadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badSeeds := write("bad-seeds", "# comment\nhttp://ok.test/\nftp://nope.test/x\n")
	badConfig := write("bad.toml", "host-delay = [broken\n")
	unknownConfig := write("unknown.toml", "# settings\nmax-urls = 5\nhots = \"x\"\n")
	emptySeeds := write("empty-seeds", "")
	commentSeeds := write("comment-seeds", "# only a comment\n\n   # another\n")
	spaceSeeds := write("space-seeds", "  http://ok.test/  \nhttp://x.test/a b.html\n")
	twoSeeds := write("two-seeds", "http://ok.test/\nhttp://a.test/ http://b.test/\n")
	badHosts := write("bad-hosts", "not-an-ip name.test\n")
	locked := filepath.Join(dir, "locked")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"malformed seed line", []string{"--seeds", badSeeds}, "bad-seeds:3"},
		{"unreadable config", []string{"--config", badConfig, "http://a.test/"}, "bad.toml"},
		{"unknown config key", []string{"--config", unknownConfig, "http://a.test/"}, `unknown.toml:3: unknown setting "hots"`},
		{"no seeds", []string{}, "no seeds: give URLs, --seeds FILE, or --dir of a crawl to resume"},
		{"empty seeds file", []string{"--seeds", emptySeeds}, "no seeds: give URLs, --seeds FILE, or --dir of a crawl to resume"},
		{"comment-only seeds file", []string{"--seeds", commentSeeds}, "no seeds: give URLs, --seeds FILE, or --dir of a crawl to resume"},
		{"whitespace in a seed line", []string{"--seeds", spaceSeeds}, `space-seeds:2: "http://x.test/a b.html" holds whitespace`},
		{"two URLs on a seed line", []string{"--seeds", twoSeeds}, "two-seeds:2:"},
		{"seed argument without scheme", []string{"example.test/page"}, `seed argument: "example.test/page" is not an absolute URL`},
		{"negative progress", []string{"--progress", "-1s", "http://a.test/"}, "--progress must be between 0s and 1h, not -1s"},
		{"delay past its bound", []string{"--ip-delay", "2562047h", "http://a.test/"}, "--ip-delay must be between 0s and 1h, not 2562047h"},
		{"negative count", []string{"--max-urls", "-5", "http://a.test/"}, "--max-urls must be at least 0, not -5"},
		{"bad size", []string{"--max-body", "1 parsec", "http://a.test/"}, "--max-body"},
		{"size below the minimum", []string{"--max-body", "1000", "http://a.test/"}, "--max-body must be between 1KiB and 1TiB, not 1000"},
		{"broken hosts file", []string{"--hosts", badHosts, "http://a.test/"}, "bad-hosts"},
		{"bad scope", []string{"--scope", "galaxy", "http://a.test/"}, "scope"},
		{"bad flag value", []string{"--fetchers", "0", "http://a.test/"}, "fetchers"},
		{"unknown flag", []string{"--frobnicate", "http://a.test/"}, "frobnicate"},
		{"misspelt flag", []string{"--host-dely", "1s", "http://a.test/"}, "unknown flag: --host-dely (did you mean --host-delay?)"},
		{"flag with one dash", []string{"-host-delay", "1s", "http://a.test/"}, "-host-delay: flags take two dashes: --host-delay"},
		{"unwritable dir", []string{"--dir", "/proc/petrel-cannot-write", "http://a.test/"}, "crawl directory"},
		{"directory in use", []string{"--dir", locked, "http://a.test/"}, "in use"},
	}
	holdLock(t, locked) // as a running crawl would
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"crawl", "--system-dns=false", "--dir", filepath.Join(dir, "crawl-"+strings.ReplaceAll(c.name, " ", "-"))}, c.args...)
			cmd := exec.Command(petrel, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit %v, want code 2; stderr: %s", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), c.want) {
				t.Errorf("stderr %q does not name %q", stderr.String(), c.want)
			}
			if n := strings.Count(strings.TrimSpace(stderr.String()), "\n"); n > 0 {
				t.Errorf("error is %d lines, want one: %q", n+1, stderr.String())
			}
			if strings.Contains(c.name, "seed") && strings.Count(stderr.String(), "example.test/page")+strings.Count(stderr.String(), "x.test/a b") > 1 {
				t.Errorf("the seed is named more than once: %q", stderr.String())
			}
		})
	}
}
