package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gowarc "github.com/nlnwa/gowarc/v3"

	"github.com/petrel-crawler/petrel/internal/store"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// indexedCapture is a 200 response of a crawl's merged CDXJ index.
type indexedCapture struct {
	uri, mime, digest string
	date              time.Time
}

// readCaptures reads the 200 response lines of a crawl's merged index:
// by URL, and the earliest of each payload digest.
func readCaptures(t *testing.T, dir string) (byURL, byDigest map[string]indexedCapture) {
	t.Helper()
	f, err := os.Open(store.MergedIndex(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byURL, byDigest = map[string]indexedCapture{}, map[string]indexedCapture{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.SplitN(sc.Text(), " ", 3)
		var j struct{ URL, Mime, Status, Digest string }
		if len(fields) != 3 || json.Unmarshal([]byte(fields[2]), &j) != nil {
			t.Fatalf("index line %q", sc.Text())
		}
		d, err := time.Parse("20060102150405", fields[1])
		if err != nil || j.Status != "200" || j.Mime == "warc/revisit" {
			continue
		}
		c := indexedCapture{uri: j.URL, mime: j.Mime, digest: j.Digest, date: d}
		byURL[j.URL] = c
		if e, ok := byDigest[j.Digest]; !ok || d.Before(e.date) {
			byDigest[j.Digest] = c
		}
	}
	return byURL, byDigest
}

// warcBytes sums the sizes of a crawl's WARC files.
func warcBytes(t *testing.T, dir string) int64 {
	files, _ := filepath.Glob(filepath.Join(dir, "warc", "*.warc.gz"))
	var n int64
	for _, p := range files {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// TestDedupIndex crawls a web into A, then the same web into B with
// --dedup-index A/indexes: every HTML page of B that A had is an
// identical-payload-digest revisit record naming A's capture of that
// payload (its URI and date) and no record ID; B's WARC files are much
// smaller; crawl.log and the summary count the revisits; warcio indexes
// B's files. A --dedup-index that does not exist is a one-line error.
func TestDedupIndex(t *testing.T) {
	t.Parallel() // judges records and indexes, not timing
	r := startWeb(t, testweb.Config{Hosts: 4, HostsPerIP: 2, PagesPerHost: 12, PageBytes: 16 << 10, Seed: 23, FirstIP: netip.MustParseAddr("127.74.0.1")})
	delays := []string{"--host-delay", "10ms", "--ip-delay", "5ms"}
	a := r.dir
	if err := r.crawl(t, time.Minute, delays...); err != nil {
		t.Fatalf("crawl A: %v\n%s", err, r.stderr.String())
	}
	r.dir, r.stderr = filepath.Join(filepath.Dir(a), "B"), bytes.Buffer{}
	if err := r.crawl(t, time.Minute, append(delays, "--dedup-index", filepath.Join(a, "indexes"))...); err != nil {
		t.Fatalf("crawl B: %v\n%s", err, r.stderr.String())
	}
	aByURL, aByDigest := readCaptures(t, a)
	pages, revisits := 0, 0
	eachWARCRecord(t, filepath.Join(r.dir, "warc"), func(f string, rec gowarc.Record) {
		for _, v := range rec.Validation {
			t.Errorf("%s offset %d: %v", f, rec.Offset, v)
		}
		h := rec.WarcRecord.WarcHeader()
		typ, uri := rec.WarcRecord.Type(), h.Get(gowarc.WarcTargetURI)
		if typ == gowarc.Revisit && h.Get(gowarc.WarcRefersTo) == "" {
			revisits++
		}
		ac, ok := aByURL[uri]
		if !ok || !strings.HasPrefix(ac.mime, "text/html") || (typ != gowarc.Response && typ != gowarc.Revisit) {
			return
		}
		pages++
		want := aByDigest[ac.digest]
		refDate, _ := time.Parse(time.RFC3339Nano, h.Get(gowarc.WarcRefersToDate))
		if typ != gowarc.Revisit || h.Get(gowarc.WarcProfile) != gowarc.ProfileIdenticalPayloadDigestV1_1 ||
			h.Get(gowarc.WarcRefersTo) != "" || h.Get(gowarc.WarcRefersToTargetURI) != want.uri || !refDate.Equal(want.date) {
			t.Errorf("%s in B: %v %s refers to %q at %q; want a revisit of %s at %v", uri, typ, h.Get(gowarc.WarcProfile),
				h.Get(gowarc.WarcRefersToTargetURI), h.Get(gowarc.WarcRefersToDate), want.uri, want.date)
		}
	})
	if pages < 40 {
		t.Fatalf("only %d HTML pages of A in B", pages)
	}
	checkDedupCounts(t, r, revisits)
	sa, sb := warcBytes(t, a), warcBytes(t, r.dir)
	if sb*2 > sa {
		t.Errorf("B's WARC files are %d bytes, A's %d: not much smaller", sb, sa)
	}
	t.Logf("%d HTML pages of A in B, %d revisits to A; WARC bytes A %d, B %d", pages, revisits, sa, sb)
	checkWarcioIndex(t, r.dir)

	_, stderr, code := petrelOut(t, "crawl", "--dir", filepath.Join(filepath.Dir(a), "C"), "--seeds", r.seeds,
		"--dedup-index", filepath.Join(a, "nothing.cdxj"))
	if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "--dedup-index") {
		t.Errorf("a missing --dedup-index: exit %d, %q", code, stderr)
	}
}

// checkDedupCounts: crawl.log and the summary count the revisits to the
// earlier crawl.
func checkDedupCounts(t *testing.T, r *crawlRun, revisits int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, "logs", "crawl.log"))
	if n := strings.Count(string(b), "duplicate:dedup-index"); err != nil || n != revisits {
		t.Errorf("crawl.log marks %d revisits to the earlier crawl, the WARC files hold %d (%v)", n, revisits, err)
	}
	if st := readStats(t, r.dir); st["PriorRevisits"] != int64(revisits) || st["PriorBytes"] <= 0 {
		t.Errorf("stats: %d revisits to the earlier crawl, %d bytes not stored; want %d", st["PriorRevisits"], st["PriorBytes"], revisits)
	}
	if !strings.Contains(r.stderr.String(), "of an earlier crawl's payloads") {
		t.Errorf("the summary does not count them:\n%s", r.stderr.String())
	}
}

// checkWarcioIndex reads a crawl's WARC files with warcio: its index
// names the revisits' targets, and its cdx-index equals the crawl's
// merged index (revisit records as warc/revisit).
func checkWarcioIndex(t *testing.T, dir string) {
	t.Helper()
	warcio := findWarcio(t, "B's files")
	if warcio == "" {
		return
	}
	files, _ := filepath.Glob(filepath.Join(dir, "warc", "*.warc.gz"))
	out, err := exec.Command(warcio, append(append([]string{"index"}, files...), "-f", "warc-type", "-f", "warc-refers-to-target-uri")...).Output()
	if err != nil {
		t.Fatalf("warcio index %s: %v", files, err)
	}
	if !strings.Contains(string(out), `"warc-type":"revisit","warc-refers-to-target-uri":"http`) {
		t.Errorf("warcio index: %.500s", out)
	}
	out, err = exec.Command(warcio, append([]string{"cdx-index"}, files...)...).Output()
	if err != nil {
		t.Fatalf("warcio cdx-index %s: %v", files, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	slices.Sort(lines)
	merged, err := os.ReadFile(store.MergedIndex(dir))
	if got := strings.Join(lines, "\n") + "\n"; err != nil || got != string(merged) {
		t.Errorf("indexes/index.cdxj differs from warcio cdx-index (%v):\n%s\nwarcio:\n%s", err, merged, got)
	}
}

// TestReplayDedup crawls the archive site twice, the second crawl with
// --dedup-index of the first, packages both in one WACZ and replays the
// second crawl's pages in ReplayWeb.page: each page (its latest capture,
// the second crawl's revisit record of the first crawl's capture) is shown
// with its title and every requisite (revisits too).
func TestReplayDedup(t *testing.T) {
	chromium, replayDir := replayTools(t)
	s := startArchiveSite(t)
	a := crawlArchiveSite(t, s)
	time.Sleep(1100 * time.Millisecond) // WARC file names, stamped to the second, must differ in one WACZ
	b := crawlArchiveSite(t, s, "--dedup-index", filepath.Join(a, "indexes"))
	if st := readStats(t, b); st["PriorRevisits"] < 5 {
		t.Fatalf("the second crawl wrote %d revisits of the first's captures", st["PriorRevisits"])
	}
	wacz := filepath.Join(t.TempDir(), "ab.wacz")
	if out, errOut, code := petrelOut(t, "warc", "wacz", a, b, "-o", wacz); code != 0 {
		t.Fatalf("warc wacz: exit %d: %s%s", code, out, errOut)
	}
	base := serveReplay(t, replayDir, map[string]string{"ab.wacz": wacz})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bctx := replayBrowser(t, ctx, chromium)
	requisites := []string{"/style.css", "/app.js", "/img/logo.png", "/img/bg.png"}
	for _, path := range []string{"/", "/about.html"} {
		stamp := revisitStamp(t, b, s.url(path))
		f := replayPage(t, bctx, "ab.wacz "+path, base+"/?wacz=ab.wacz&url="+s.url(path), s.url(path), archivePages[path], requisites)
		if f != nil && !strings.Contains(f.URL, "/"+stamp+"mp_/") {
			t.Errorf("%s replayed from %s, not from the second crawl's revisit of %s", path, f.URL, stamp)
		}
	}
}

// revisitStamp returns the timestamp of the revisit record of uri in a
// crawl's merged index.
func revisitStamp(t *testing.T, dir, uri string) string {
	t.Helper()
	b, err := os.ReadFile(store.MergedIndex(dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.SplitN(l, " ", 3); len(f) == 3 && strings.Contains(f[2], `"url":"`+uri+`"`) && strings.Contains(f[2], "warc/revisit") {
			return f[1]
		}
	}
	t.Fatalf("no revisit of %s in %s", uri, store.MergedIndex(dir))
	return ""
}

// TestReplayNotModified crawls the archive site with --revisit until its
// --max-urls page fetches are done: /about.html, which sends an ETag, is
// answered 304 to its conditional revisits, stored as server-not-modified
// revisit records of its first capture. Packaged as a WACZ, its latest
// capture — a 304 record — replays in ReplayWeb.page with its title and
// every requisite.
func TestReplayNotModified(t *testing.T) {
	chromium, replayDir := replayTools(t)
	s := startArchiveSite(t)
	dir := crawlArchiveSite(t, s, "--revisit", "--revisit-min", "300ms", "--revisit-max", "300ms", "--max-urls", "30")
	about := s.url("/about.html")
	log, err := os.ReadFile(filepath.Join(dir, "logs", "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	notModified := 0
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, " "+about+" ") && strings.Contains(l, "revisit:not-modified") {
			notModified++
		}
	}
	if notModified == 0 {
		t.Fatalf("no 304 to a revisit of %s in crawl.log:\n%s", about, log)
	}
	stamps := revisitStamps(t, dir, about)
	wacz := filepath.Join(t.TempDir(), "revisits.wacz")
	if out, errOut, code := petrelOut(t, "warc", "wacz", dir, "-o", wacz); code != 0 {
		t.Fatalf("warc wacz: exit %d: %s%s", code, out, errOut)
	}
	base := serveReplay(t, replayDir, map[string]string{"revisits.wacz": wacz})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bctx := replayBrowser(t, ctx, chromium)
	requisites := []string{"/style.css", "/app.js", "/img/logo.png", "/img/bg.png"}
	f := replayPage(t, bctx, "revisits.wacz /about.html", base+"/?wacz=revisits.wacz&url="+about, about, archivePages["/about.html"], requisites)
	if f == nil {
		return
	}
	for _, st := range stamps {
		if strings.Contains(f.URL, "/"+st+"mp_/") {
			t.Logf("%d 304s of %s; replayed from the 304 record of %s", notModified, about, st)
			return
		}
	}
	t.Errorf("%s replayed from %s, not from one of its 304 records %v", about, f.URL, stamps)
}

// revisitStamps returns the timestamps of the revisit records of uri in a
// crawl's merged index.
func revisitStamps(t *testing.T, dir, uri string) []string {
	t.Helper()
	b, err := os.ReadFile(store.MergedIndex(dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.SplitN(l, " ", 3); len(f) == 3 && strings.Contains(f[2], `"url":"`+uri+`"`) && strings.Contains(f[2], "warc/revisit") {
			out = append(out, f[1])
		}
	}
	if len(out) == 0 {
		t.Fatalf("no revisit of %s in %s", uri, store.MergedIndex(dir))
	}
	return out
}
