package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The documentation sites: the PostgreSQL and Python manuals as Debian
// installs them, each served by its own nginx.
var docSiteRoots = []struct{ name, root string }{
	{"pg", "/usr/share/doc/postgresql-doc-15/html"},
	{"py", "/usr/share/doc/python3-doc/html"},
}

// docSitePort is the port every documentation site listens on, each on
// its own loopback address.
const docSitePort = 8077

// docSite is one documentation site served by an unprivileged nginx with
// its own prefix, configuration and logs in a temporary directory.
type docSite struct {
	name, root, addr string // addr is IP:port
	prefix           string
	cmd              *exec.Cmd
	done             chan error
}

// startDocSite writes nginx's configuration for root on ip and starts it.
func startDocSite(t *testing.T, name, root, ip string) *docSite {
	t.Helper()
	s := &docSite{name: name, root: root, addr: fmt.Sprintf("%s:%d", ip, docSitePort), prefix: t.TempDir()}
	for _, d := range []string{"logs", "tmp"} {
		if err := os.Mkdir(filepath.Join(s.prefix, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	conf := fmt.Sprintf(`daemon off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/logs/error.log;
events { worker_connections 512; }
http {
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  log_format timed '$msec $status $request_method "$request_uri" $body_bytes_sent "$http_user_agent"';
  access_log %[1]s/logs/access.log timed;
  client_body_temp_path %[1]s/tmp/body;
  proxy_temp_path %[1]s/tmp/proxy;
  fastcgi_temp_path %[1]s/tmp/fastcgi;
  uwsgi_temp_path %[1]s/tmp/uwsgi;
  scgi_temp_path %[1]s/tmp/scgi;
  server { listen %[2]s; root %[3]s; }
}
`, s.prefix, s.addr, root)
	if err := os.WriteFile(s.conf(), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	s.start(t)
	t.Cleanup(func() { s.stop(t) })
	return s
}

func (s *docSite) conf() string { return filepath.Join(s.prefix, "nginx.conf") }

func (s *docSite) url(path string) string { return "http://" + s.addr + path }

// docSiteProbe is the User-Agent of the request that tells nginx is up;
// accessTimes leaves it out.
const docSiteProbe = "docsites-probe"

// start starts nginx with the site's configuration and waits until it
// answers.
func (s *docSite) start(t *testing.T) {
	t.Helper()
	s.cmd = exec.Command("/usr/sbin/nginx", "-p", s.prefix, "-c", s.conf())
	s.cmd.Stderr = os.Stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("nginx: %v", err)
	}
	s.done = make(chan error, 1)
	go func() { s.done <- s.cmd.Wait() }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		select {
		case err := <-s.done:
			t.Fatalf("nginx of %s exited: %v", s.name, err)
		default:
		}
		if out, err := exec.Command("curl", "-sf", "-A", docSiteProbe, "-o", "/dev/null", s.url("/index.html")).CombinedOutput(); err == nil {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("nginx of %s does not answer: %v %s", s.name, err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop stops nginx (nginx -s stop) and waits for it to exit.
func (s *docSite) stop(t *testing.T) {
	t.Helper()
	if s.cmd == nil {
		return
	}
	if out, err := exec.Command("/usr/sbin/nginx", "-p", s.prefix, "-c", s.conf(), "-s", "stop").CombinedOutput(); err != nil {
		t.Errorf("nginx -s stop: %v %s", err, out)
		s.cmd.Process.Kill()
	}
	<-s.done
	s.cmd = nil
}

// accessTimes returns the times of the requests in nginx's access log,
// but for start's probes.
func (s *docSite) accessTimes(t *testing.T) []time.Time {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.prefix, "logs", "access.log"))
	if err != nil {
		t.Fatal(err)
	}
	var times []time.Time
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasSuffix(line, `"`+docSiteProbe+`"`) {
			continue
		}
		sec, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			t.Fatalf("access log line %q: %v", line, err)
		}
		times = append(times, time.UnixMilli(int64(sec*1000)))
	}
	return times
}

// docPair is the two sites on two addresses.
type docPair []*docSite

func startDocPair(t *testing.T, ips ...string) docPair {
	var p docPair
	for i, r := range docSiteRoots {
		p = append(p, startDocSite(t, r.name, r.root, ips[i]))
	}
	return p
}

// site returns the pair's site called name.
func (p docPair) site(name string) *docSite {
	for _, s := range p {
		if s.name == name {
			return s
		}
	}
	return nil
}

// key names u by site and path ("py/library/os.html"), so that the URLs of
// pairs on other addresses compare; "" for a URL of no site of the pair.
func (p docPair) key(u string) string {
	for _, s := range p {
		if rest, ok := strings.CutPrefix(u, "http://"+s.addr+"/"); ok {
			return s.name + "/" + rest
		}
	}
	return ""
}

// wgetKeys runs wget -r -p -nv from the site's /index.html in a directory
// of its own and returns the keys of every URL it fetched (whatever the
// status), with how long it took.
func wgetKeys(t *testing.T, p docPair, s *docSite) (map[string]bool, time.Duration) {
	t.Helper()
	dir := t.TempDir()
	start := time.Now()
	cmd := exec.Command("wget", "-r", "-p", "-nv", "-P", dir, s.url("/index.html"))
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	// wget exits 8 when a URL answered an error (the docs' broken links).
	if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 8) {
		t.Fatalf("wget %s: %v\n%s", s.name, err, out)
	}
	keys := map[string]bool{}
	// "URL:http://… [n/n] -> …" for a fetch, "http://…:" then "ERROR 404" for an error.
	fetched := regexp.MustCompile(`URL: ?(http://\S+)`)
	failed := regexp.MustCompile(`^(http://\S+):$`)
	for _, line := range strings.Split(string(out), "\n") {
		if m := fetched.FindStringSubmatch(line); m != nil {
			keys[p.key(m[1])] = true
		} else if m := failed.FindStringSubmatch(line); m != nil {
			keys[p.key(m[1])] = true
		}
	}
	delete(keys, "")
	return keys, took
}

// docCrawl is one petrel crawl of a pair.
type docCrawl struct {
	dir    string
	code   int
	stderr string
	took   time.Duration
}

// crawlDocs crawls the pair from both sites' /index.html with the defaults
// (the names of the web outside resolve nowhere: --system-dns=false), and
// extra flags. during, if not nil, runs beside the crawl.
func crawlDocs(t *testing.T, p docPair, dir string, extra []string, during func()) docCrawl {
	t.Helper()
	seeds := filepath.Join(t.TempDir(), "seeds.txt")
	var lines []string
	for _, s := range p {
		lines = append(lines, s.url("/index.html"))
	}
	if err := os.WriteFile(seeds, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"crawl", "--dir", dir, "--seeds", seeds, "--allow-private", "--system-dns=false", "--progress", "1m"}, extra...)
	if d := os.Getenv("PETREL_DOCSITES_DELAY"); d != "" && !slices.Contains(extra, "--host-delay") {
		args = append(args, "--host-delay", d, "--ip-delay", d)
	}
	var stderr strings.Builder
	cmd := exec.Command(petrel, args...)
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	if during != nil {
		wg.Go(during)
	}
	err := cmd.Wait()
	took := time.Since(start)
	wg.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return docCrawl{dir: dir, code: code, stderr: stderr.String(), took: took}
}

// warcRecord is one line of petrel warc ls --json.
type warcRecord struct {
	Type   string `json:"type"`
	Status int    `json:"status"`
	URL    string `json:"url"`
}

// fetchedKeys returns the keys of the pair's URLs that have a response
// record in the crawl's WARC files.
func fetchedKeys(t *testing.T, p docPair, dir string) map[string]bool {
	t.Helper()
	out, errOut, code := petrelOut(t, "warc", "ls", "--json", dir)
	if code != 0 {
		t.Fatalf("warc ls: exit %d: %s", code, errOut)
	}
	keys := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r warcRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("warc ls line %q: %v", line, err)
		}
		if k := p.key(r.URL); k != "" && (r.Type == "response" || r.Type == "revisit") {
			keys[k] = true
		}
	}
	return keys
}

// missingKeys returns the keys of want absent from have, sorted.
func missingKeys(want, have map[string]bool) []string {
	var m []string
	for k := range want {
		if !have[k] {
			m = append(m, k)
		}
	}
	sort.Strings(m)
	return m
}

// lostOnSites returns the lines of the crawl's state/failed and
// logs/skipped.jsonl that name a URL of the pair's sites: a URL given up,
// or not followed.
func lostOnSites(t *testing.T, p docPair, dir string) []string {
	t.Helper()
	var lost []string
	for _, f := range []string{"state/failed", "logs/skipped.jsonl"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var u string // state/failed: reason, key and URL, tab-separated
			if fields := strings.Split(line, "\t"); len(fields) == 3 {
				u = fields[2]
			} else {
				var sk struct{ URL string }
				json.Unmarshal([]byte(line), &sk)
				u = sk.URL
			}
			if p.key(u) != "" {
				lost = append(lost, f+": "+line)
			}
		}
	}
	return lost
}

// refusedTries counts the lines of the crawl's crawl.log for site s with a
// network failure (a negative status) and returns the times of the first
// and last.
func refusedTries(t *testing.T, s *docSite, dir string) (n int, first, last time.Time) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "logs", "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) < 4 || !strings.HasPrefix(fl[3], "http://"+s.addr+"/") || !strings.HasPrefix(fl[1], "-") {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, fl[0])
		if err != nil {
			t.Fatalf("crawl.log line %q: %v", sc.Text(), err)
		}
		if n == 0 {
			first = at
		}
		n, last = n+1, at
	}
	return n, first, last
}

// outageResult is what an outage run measured.
type outageResult struct {
	crawl                     docCrawl
	stopped, restarted        time.Time
	before, during, after     int // requests nginx logged before it exited, in the outage, after the restart (its probes left out)
	refused                   int // crawl.log lines of network failures on the site
	firstRefused, lastRefused time.Time
	firstAfter                time.Time
	missing                   []string
	lost                      []string
}

// crawlWithOutage crawls the pair with extra flags, stops site down's
// nginx 4 s in and starts it again 20 s later.
func crawlWithOutage(t *testing.T, p docPair, down string, extra []string) outageResult {
	t.Helper()
	s := p.site(down)
	var r outageResult
	r.crawl = crawlDocs(t, p, filepath.Join(t.TempDir(), "crawl"), extra, func() {
		time.Sleep(4 * time.Second)
		s.stop(t)
		r.stopped = time.Now() // nginx has exited: what it logged is before
		time.Sleep(20 * time.Second)
		r.restarted = time.Now()
		s.start(t)
	})
	for _, at := range s.accessTimes(t) {
		switch {
		case at.Before(r.stopped):
			r.before++
		case at.Before(r.restarted):
			r.during++
		default:
			if r.after == 0 {
				r.firstAfter = at
			}
			r.after++
		}
	}
	r.refused, r.firstRefused, r.lastRefused = refusedTries(t, s, r.crawl.dir)
	return r
}

// TestDocSites is the documentation-sites scenario: the PostgreSQL and
// Python manuals served by nginx on loopback, crawled with petrel's
// defaults. It checks that petrel fetches every URL wget -r -p fetches,
// that a 20-second outage of one site loses nothing (with the defaults and
// with --host-delay 30ms), and that the crawl's WACZ replays every HTML
// page in ReplayWeb.page with no requisite missing. It takes about an
// hour (the defaults' 2 s host delay over 1,175 PostgreSQL URLs, then the
// replay), so it runs only with PETREL_DOCSITES=1.
// PETREL_DOCSITES_DELAY=50ms (both delays of the crawls meant to have the
// defaults) with PETREL_DOCSITES_REPLAY_LIMIT=60 gives a try of the
// harness in minutes, which is not the scenario; PETREL_DOCSITES_TABS sets
// the replay's tabs (4).
func TestDocSites(t *testing.T) {
	if os.Getenv("PETREL_DOCSITES") != "1" {
		t.Skip("the documentation-sites scenario takes about an hour: PETREL_DOCSITES=1 PETREL_REPLAYWEB_DIR=… go test -count=1 -timeout 2h -run TestDocSites -v ./e2e/ (needs nginx, wget, chromium, postgresql-doc-15 and python3-doc; BENCHMARKS.md)")
	}
	for _, need := range []string{"/usr/sbin/nginx", "/etc/nginx/mime.types", docSiteRoots[0].root, docSiteRoots[1].root} {
		if _, err := os.Stat(need); err != nil {
			t.Fatalf("the documentation sites need %s: %v", need, err)
		}
	}
	if _, err := exec.LookPath("wget"); err != nil {
		t.Fatal(err)
	}
	chromium, replayDir := replayTools(t)
	plain := startDocPair(t, "127.0.77.1", "127.0.77.2")
	outDefaults := startDocPair(t, "127.0.77.3", "127.0.77.4")
	outFast := startDocPair(t, "127.0.77.5", "127.0.77.6")

	// wget, one site after the other.
	wget := map[string]bool{}
	for _, s := range plain {
		keys, took := wgetKeys(t, plain, s)
		t.Logf("wget -r -p -nv %s: %d URLs in %s", s.url("/index.html"), len(keys), took.Round(time.Millisecond))
		for k := range keys {
			wget[k] = true
		}
	}

	// The three crawls at once: each pair is a web of its own.
	var (
		base             docCrawl
		outage, outage30 outageResult
		wg               sync.WaitGroup
	)
	wg.Go(func() { base = crawlDocs(t, plain, filepath.Join(t.TempDir(), "crawl"), nil, nil) })
	wg.Go(func() { outage = crawlWithOutage(t, outDefaults, "pg", nil) })
	wg.Go(func() {
		outage30 = crawlWithOutage(t, outFast, "py", []string{"--host-delay", "30ms", "--ip-delay", "30ms"})
	})
	wg.Wait()

	got := checkWgetParity(t, plain, wget, base)                   // 1. petrel fetches what wget fetches
	checkOutage(t, "defaults, pg down", outDefaults, &outage, got) // 2. nothing lost across an outage
	checkOutage(t, "--host-delay 30ms --ip-delay 30ms, py down", outFast, &outage30, got)
	// 3. The WACZ replays every page.
	replayDocSites(t, chromium, replayDir, plain, base.dir)
}

// checkWgetParity judges the crawl with the defaults against wget's URLs:
// every one fetched, nothing of the sites given up; it returns the keys
// the crawl fetched.
func checkWgetParity(t *testing.T, plain docPair, wget map[string]bool, base docCrawl) map[string]bool {
	t.Helper()
	if base.code != 0 {
		t.Errorf("crawl with the defaults: exit %d\n%s", base.code, base.stderr)
	}
	got := fetchedKeys(t, plain, base.dir)
	t.Logf("petrel crawl (defaults): exit %d in %s, %d URLs of the two sites fetched; wget %d", base.code, base.took.Round(time.Second), len(got), len(wget))
	for _, name := range []string{"pg", "py"} {
		w, g := 0, 0
		for k := range wget {
			if strings.HasPrefix(k, name+"/") {
				w++
			}
		}
		for k := range got {
			if strings.HasPrefix(k, name+"/") {
				g++
			}
		}
		t.Logf("  %s: wget %d, petrel %d", name, w, g)
	}
	for _, k := range missingKeys(wget, got) {
		t.Errorf("wget fetched %s, petrel did not", k)
	}
	if extra := missingKeys(got, wget); len(extra) > 0 {
		t.Logf("petrel fetched %d URLs wget did not: %v", len(extra), extra)
	}
	if lost := lostOnSites(t, plain, base.dir); len(lost) > 0 {
		t.Errorf("crawl with the defaults gave up or skipped %d URLs of the sites: %v", len(lost), lost)
	}
	t.Logf("crawl with the defaults, stderr:\n%s", base.stderr)
	return got
}

// checkOutage judges an outage run r of pair p: exit 0, every URL of the
// run without outage (got) fetched, nothing of the sites given up, and the
// outage seen in nginx's log and petrel's crawl.log.
func checkOutage(t *testing.T, what string, p docPair, r *outageResult, got map[string]bool) {
	t.Helper()
	r.missing = missingKeys(got, fetchedKeys(t, p, r.crawl.dir))
	r.lost = lostOnSites(t, p, r.crawl.dir)
	t.Logf("outage (%s): exit %d in %s; nginx stopped %s after the start, down for %s; requests logged before %d, during %d, after %d (petrel's first %s after the restart); %d network failures in crawl.log from %s to %s; of the %d URLs of the run without outage %d missing; %d lines in state/failed or skipped.jsonl",
		what, r.crawl.code, r.crawl.took.Round(time.Second), "4s", r.restarted.Sub(r.stopped).Round(time.Millisecond),
		r.before, r.during, r.after, r.firstAfter.Sub(r.restarted).Round(time.Millisecond), r.refused,
		r.firstRefused.Sub(r.stopped).Round(time.Millisecond), r.lastRefused.Sub(r.stopped).Round(time.Millisecond),
		len(got), len(r.missing), len(r.lost))
	t.Logf("outage (%s), stderr:\n%s", what, r.crawl.stderr)
	if r.crawl.code != 0 {
		t.Errorf("outage (%s): exit %d", what, r.crawl.code)
	}
	if r.during != 0 || r.refused == 0 || r.after == 0 {
		t.Errorf("outage (%s): the outage did not refuse requests as planned (nginx logged %d in it, %d after; crawl.log %d failures)", what, r.during, r.after, r.refused)
	}
	for _, k := range r.missing {
		t.Errorf("outage (%s): %s not fetched", what, k)
	}
	for _, l := range r.lost {
		t.Errorf("outage (%s): %s", what, l)
	}
}

// docPage is one HTML page of the crawl as pages.jsonl lists it.
type docPage struct {
	URL    string `json:"url"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Mime   string `json:"mime"`
}

// pageReplay is what loading one page in ReplayWeb.page showed.
type pageReplay struct {
	page    docPage
	frame   *frameReport
	err     error
	missing []string // requisites the replay answered with an error, the archive holding them otherwise
	loaded  int
	took    time.Duration
}

// replayDocSites packages the crawl as a WACZ and loads every HTML page
// with status 200 through ReplayWeb.page, in a few tabs at once.
func replayDocSites(t *testing.T, chromium, replayDir string, p docPair, dir string) {
	t.Helper()
	wacz := filepath.Join(t.TempDir(), "docs.wacz")
	start := time.Now()
	if out, errOut, code := petrelOut(t, "warc", "wacz", dir, "-o", wacz); code != 0 {
		t.Fatalf("warc wacz: exit %d: %s%s", code, out, errOut)
	}
	fi, _ := os.Stat(wacz)
	t.Logf("warc wacz: %d bytes in %s", fi.Size(), time.Since(start).Round(time.Millisecond))
	pages, archived := docArchive(t, p, dir)
	if n, err := strconv.Atoi(os.Getenv("PETREL_DOCSITES_REPLAY_LIMIT")); err == nil && n > 0 && n < len(pages) {
		t.Logf("replaying %d of the %d pages (PETREL_DOCSITES_REPLAY_LIMIT)", n, len(pages))
		pages = pages[:n]
	}
	base := serveReplay(t, replayDir, map[string]string{"docs.wacz": wacz})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Minute)
	defer cancel()
	bctx := replayBrowser(t, ctx, chromium)
	if err := chromedp.Do(bctx); err != nil { // the browser starts
		t.Fatal(err)
	}
	tabs := 4
	if n, err := strconv.Atoi(os.Getenv("PETREL_DOCSITES_TABS")); err == nil && n > 0 {
		tabs = n
	}
	start = time.Now()
	results := replayInTabs(t, bctx, tabs, pages, func(tab context.Context, pg docPage) pageReplay {
		return replayDocPage(tab, base, pg, archived)
	})
	judgeReplays(t, p, results, fmt.Sprintf("%d tabs, %s", tabs, time.Since(start).Round(time.Second)))
}

// docArchive returns the crawl's HTML pages of the pair's sites with status
// 200 (pages.jsonl), and the status of each response the archive holds: a
// requisite the site itself answered with an error replays as that error,
// which is no loss.
func docArchive(t *testing.T, p docPair, dir string) ([]docPage, map[string]int) {
	t.Helper()
	archived := map[string]int{}
	out, _, _ := petrelOut(t, "warc", "ls", "--json", dir)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r warcRecord
		if json.Unmarshal([]byte(line), &r) == nil && r.Type == "response" {
			archived[r.URL] = r.Status
		}
	}
	var pages []docPage
	b, err := os.ReadFile(filepath.Join(dir, "logs", "pages.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var pg docPage
		if err := json.Unmarshal([]byte(line), &pg); err != nil {
			t.Fatalf("pages.jsonl line %q: %v", line, err)
		}
		if pg.Status == 200 && p.key(pg.URL) != "" {
			pages = append(pages, pg)
		}
	}
	return pages, archived
}

// replayInTabs replays the first page alone in bctx (the service worker
// starts and loads the WACZ), then the others in tabs new tabs taking
// pages from one queue; it returns what each page showed, in order.
func replayInTabs(t *testing.T, bctx context.Context, tabs int, pages []docPage, replay func(context.Context, docPage) pageReplay) []pageReplay {
	results := make([]pageReplay, len(pages))
	results[0] = replay(bctx, pages[0])
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range tabs {
		tab, cancelTab := chromedp.NewContext(bctx)
		defer cancelTab()
		wg.Go(func() {
			for i := range next {
				results[i] = replay(tab, pages[i])
				if i%250 == 0 {
					t.Logf("replay: page %d of %d after %s", i, len(pages), time.Since(start).Round(time.Second))
				}
			}
		})
	}
	for i := 1; i < len(pages); i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

// judgeReplays fails the test for a page that did not replay, or replayed
// with no requisite or with a missing requisite that its HTML, a style
// sheet or a script names; a missing requisite a script makes up at run
// time (named in none of them) is logged.
func judgeReplays(t *testing.T, p docPair, results []pageReplay, how string) {
	t.Helper()
	named := namedInSource(t, p)
	replayed, withMissing, withScripted, requisites := 0, 0, 0, 0
	var slowest time.Duration
	for _, r := range results {
		if r.err != nil {
			t.Errorf("replay of %s: %v", r.page.URL, r.err)
			continue
		}
		replayed, requisites, slowest = replayed+1, requisites+r.loaded, max(slowest, r.took)
		if r.loaded == 0 {
			t.Errorf("replay of %s: no requisite loaded from the archive", r.page.URL)
		}
		var missing, scripted []string
		for _, m := range r.missing {
			if named(r.page.URL, m) {
				missing = append(missing, m)
			} else {
				scripted = append(scripted, m)
			}
		}
		if len(missing) > 0 {
			withMissing++
			t.Errorf("replay of %s: requisites missing: %v", r.page.URL, missing)
		}
		if len(scripted) > 0 {
			withScripted++
			t.Logf("replay of %s: requisites a script makes up at run time (named in no page, style sheet or script) missing: %v", r.page.URL, scripted)
		}
	}
	t.Logf("replay: %d HTML pages of %d replayed (%s; slowest page %s), %d requisite loads answered from the archive; %d pages with a missing requisite named by the page, a style sheet or a script, %d with one a script makes up at run time",
		replayed, len(results), how, slowest.Round(time.Millisecond), requisites, withMissing, withScripted)
}

// replayDocPage loads page's replay in tab and waits for the frame
// replaying it with its title, then gives its late loads (fonts, CSS
// images) 0.7 s and reports the frame's requisites: those answered
// with an error status, or with none (a failed load), that the archive
// does not hold with that status are missing.
func replayDocPage(tab context.Context, base string, page docPage, archived map[string]int) pageReplay {
	r := pageReplay{page: page}
	start := time.Now()
	target := base + "/?wacz=docs.wacz&url=" + url.QueryEscape(page.URL)
	if err := chromedp.Do(tab, chromedp.Navigate(target)); err != nil {
		r.err = err
		return r
	}
	frameOf := func() (*frameReport, string, error) {
		js, err := chromedp.Run(tab, chromedp.Evaluate[string](findFrames))
		if err != nil {
			return nil, "", err
		}
		var frames []frameReport
		json.Unmarshal([]byte(js), &frames)
		for i := range frames {
			if f := &frames[i]; f.Title == page.Title && strings.HasSuffix(f.URL, "_/"+page.URL) {
				return f, js, nil
			}
		}
		return nil, js, nil
	}
	reloaded := false
	for {
		f, js, err := frameOf()
		if err != nil {
			r.err = err
			return r
		}
		if f != nil {
			break
		}
		if time.Since(start) > 60*time.Second {
			r.err = fmt.Errorf("no replay frame titled %q within 60 s; frames: %s", page.Title, js)
			return r
		}
		if !reloaded && time.Since(start) > 20*time.Second {
			reloaded = true
			if err := chromedp.Do(tab, chromedp.Navigate(target)); err != nil {
				r.err = err
				return r
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(700 * time.Millisecond) // the frame's late loads
	f, _, err := frameOf()
	if err != nil || f == nil {
		r.err = fmt.Errorf("the replay frame went away: %v", err)
		return r
	}
	r.frame, r.took = f, time.Since(start)
	r.loaded, r.missing = frameRequisites(f, archived)
	return r
}

// frameRequisites counts the resources the frame loaded (2xx, 3xx) and
// lists those it did not, with their status, but for those the archive
// holds with that status (the site answered so too).
func frameRequisites(f *frameReport, archived map[string]int) (loaded int, missing []string) {
	for _, res := range f.Resources {
		if res.Status >= 200 && res.Status < 400 {
			loaded++
			continue
		}
		orig := res.Name // the replay's URL ends with the original one
		if i := strings.Index(orig, "_/http"); i >= 0 {
			orig = orig[i+2:]
		}
		if st, ok := archived[orig]; ok && st == res.Status {
			continue
		}
		missing = append(missing, fmt.Sprintf("%s (%d)", orig, res.Status))
	}
	return loaded, missing
}

// namedInSource returns a function telling whether the name (last path
// segment) of a requisite of page appears in the page's HTML file or in a
// style sheet or script of its site: whether a crawler that runs no
// script (but reads scripts' string literals) can find it.
func namedInSource(t *testing.T, p docPair) func(page, requisite string) bool {
	t.Helper()
	css := map[string]string{} // site → its style sheets and scripts, concatenated
	for _, s := range p {
		root, err := filepath.EvalSymlinks(s.root)
		if err != nil {
			t.Fatal(err)
		}
		var all strings.Builder
		filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && (strings.HasSuffix(path, ".css") || strings.HasSuffix(path, ".js")) {
				b, _ := os.ReadFile(path)
				all.Write(b)
			}
			return nil
		})
		css[s.name] = all.String()
	}
	return func(page, requisite string) bool {
		k := p.key(page)
		site, path, _ := strings.Cut(k, "/")
		name := requisite
		if i := strings.IndexAny(name, "?#"); i >= 0 {
			name = name[:i]
		}
		name = name[strings.LastIndex(name, "/")+1:]
		name, _, _ = strings.Cut(name, " ")
		html, _ := os.ReadFile(filepath.Join(p.site(site).root, path))
		return strings.Contains(string(html), name) || strings.Contains(css[site], name)
	}
}
