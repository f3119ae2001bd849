package agent

import (
	"bufio"
	"crypto/sha1"
	"encoding/base32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	gowarc "github.com/nlnwa/gowarc/v3"

	"github.com/petrel-crawler/petrel/internal/crawllog"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// readCrawlLog parses every line of a crawl's crawl.log (rotated files
// included), failing the test on a line that is not in Heritrix's format.
func readCrawlLog(t *testing.T, dir string) []crawllog.Line {
	t.Helper()
	var out []crawllog.Line
	for _, p := range crawllog.Files(filepath.Join(dir, "logs", "crawl.log")) {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			l, err := crawllog.Parse(sc.Text())
			if err != nil {
				t.Errorf("%s: %v", p, err)
				continue
			}
			out = append(out, l)
		}
		f.Close()
	}
	return out
}

// readSkipped parses every line of skipped.jsonl.
func readSkipped(t *testing.T, dir string) []crawllog.Skip {
	t.Helper()
	var out []crawllog.Skip
	for _, p := range crawllog.Files(filepath.Join(dir, "logs", "skipped.jsonl")) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if line == "" {
				continue
			}
			s, err := crawllog.ParseSkip([]byte(line))
			if err != nil {
				t.Errorf("%s: %q: %v", p, line, err)
			}
			out = append(out, s)
		}
	}
	return out
}

// warcPayloadDigest reads the record at file@offset with gowarc and
// returns its target URI, its WARC-Payload-Digest and the digest of its
// payload as read.
func warcPayloadDigest(t *testing.T, warcDir, ref string) (uri, header, computed string) {
	t.Helper()
	file, off, ok := strings.Cut(ref, "@")
	offset, err := strconv.ParseInt(off, 10, 64)
	if !ok || err != nil {
		t.Fatalf("bad warc annotation %q", ref)
	}
	rd, err := gowarc.NewWarcFileReader(filepath.Join(warcDir, file), offset)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	rec, err := rd.Next()
	if err != nil {
		t.Fatalf("%s: %v", ref, err)
	}
	defer rec.Close()
	h := rec.WarcRecord.WarcHeader()
	uri, header = h.Get(gowarc.WarcTargetURI), h.Get(gowarc.WarcPayloadDigest)
	if rec.WarcRecord.Type() != gowarc.Response {
		return uri, header, header // a revisit record has no payload to hash
	}
	blk, ok := rec.WarcRecord.Block().(gowarc.HttpResponseBlock)
	if !ok {
		t.Fatalf("%s: block %T", ref, rec.WarcRecord.Block())
	}
	pr, err := blk.PayloadBytes()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha1.New()
	if _, err := io.Copy(sum, pr); err != nil {
		t.Fatal(err)
	}
	return uri, header, "sha1:" + base32.StdEncoding.EncodeToString(sum.Sum(nil))
}

// TestCrawlLogOfACrawl: every line of crawl.log parses in Heritrix's
// format; there is one line per fetch, robots.txt included; every 2xx
// line's digest is that of the WARC record it names; every refused URL is
// in skipped.jsonl with a crawl.log line of its own.
func TestCrawlLogOfACrawl(t *testing.T) {
	c := newTestCrawl(t, "127.61.1.1", 6, 15, func(cfg *Config, w *testweb.Web) {
		// Seeds on four of the six hosts: links to the other two are out of scope.
		cfg.Filter.Scope, cfg.SeedsFile = "host", ""
		for _, h := range w.Hosts()[:4] {
			o, _ := w.Origin(h)
			cfg.SeedURLs = append(cfg.SeedURLs, o+"/")
		}
	})
	c.run(t)
	st := c.a.Stats()
	lines := readCrawlLog(t, c.cfg.Dir)
	var fetches, robots, refusals, ok2xx, seedLines int
	found := map[string]string{} // URL → via
	refused := map[string]bool{}
	for _, l := range lines {
		if reason, ok := l.Annotation("skip"); ok {
			refusals++
			refused[l.URL] = true
			if l.Status != crawllog.Reason(reason).Status() || l.Fetcher != 0 || !l.Start.IsZero() || l.MIME != "unknown" {
				t.Errorf("refusal line %+v", l)
			}
			continue
		}
		fetches++
		if l.Fetcher < 1 || l.Fetcher > c.cfg.Fetchers || l.Start.IsZero() {
			t.Errorf("fetch line without fetcher or start: %+v", l)
		}
		if strings.HasSuffix(l.URL, "/robots.txt") {
			robots++
			if l.HopPath != "P" {
				t.Errorf("robots.txt line with hop path %q", l.HopPath)
			}
		} else if l.Seed == "" || (l.HopPath == "") != (l.Via == "") || strings.Trim(l.HopPath, "LREX") != "" {
			t.Errorf("page line without seed, or with a hop path %q and a via %q that disagree", l.HopPath, l.Via)
		} else if l.HopPath == "" {
			seedLines++
		} else {
			found[l.URL] = l.Via
		}
		if l.Status >= 200 && l.Status < 300 {
			ok2xx++
			ref, ok := l.Annotation("warc")
			if !ok {
				t.Errorf("2xx line names no WARC record: %+v", l)
				continue
			}
			uri, header, computed := warcPayloadDigest(t, filepath.Join(c.cfg.Dir, "warc"), ref)
			if uri != l.URL || header != l.Digest || computed != l.Digest {
				t.Errorf("%s: crawl.log digest %s; the WARC record %s is of %s with WARC-Payload-Digest %s, payload %s",
					l.URL, l.Digest, ref, uri, header, computed)
			}
		}
	}
	if want := int(st.Fetched.Load() + st.RobotsFetched.Load() + st.FetchErrors.Load()); fetches != want {
		t.Errorf("%d fetch lines, want %d (pages, robots.txt and failures)", fetches, want)
	}
	if robots != 4 || ok2xx < 40 || seedLines != 4 {
		t.Errorf("%d robots.txt lines (want 4), %d 2xx lines, %d seed lines (want 4)", robots, ok2xx, seedLines)
	}
	fetched := map[string]bool{}
	for _, l := range lines {
		fetched[l.URL] = true
	}
	for u, via := range found {
		if !fetched[via] {
			t.Errorf("%s found on %s, which was not fetched", u, via)
		}
	}
	robotsLines := 0
	for _, l := range lines {
		if r, _ := l.Annotation("skip"); r == string(crawllog.ReasonRobots) {
			robotsLines++
			if l.Status != crawllog.StatusRobots || l.HopPath == "" {
				t.Errorf("robots.txt refusal %+v", l)
			}
		}
	}
	if robotsLines == 0 || int64(robotsLines) != st.RobotsDenied.Load() {
		t.Errorf("%d -9998 lines, %d URLs denied by robots.txt", robotsLines, st.RobotsDenied.Load())
	}
	if refusals == 0 || st.OutOfScope.Load() == 0 {
		t.Fatalf("no refusal logged (%d out of scope counted)", st.OutOfScope.Load())
	}
	skipped := readSkipped(t, c.cfg.Dir)
	if len(skipped) != refusals {
		t.Errorf("%d lines in skipped.jsonl, %d refusal lines in crawl.log", len(skipped), refusals)
	}
	for _, s := range skipped {
		if !refused[s.URL] || s.Via == "" || s.Status != s.Reason.Status() {
			t.Errorf("skipped %+v: no refusal line in crawl.log, or no via", s)
		}
	}
}

// eachRecord reads every WARC file of dir with gowarc and calls fn for
// each record.
func eachRecord(t *testing.T, dir string, fn func(rec gowarc.WarcRecord)) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	for _, f := range files {
		rd, err := gowarc.NewWarcFileReader(f, 0)
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := rd.Next()
			if err != nil {
				break
			}
			fn(rec.WarcRecord)
			rec.Close()
		}
		rd.Close()
	}
}

// TestCrawlLogOff crawls with --crawl-log=false (and no console): the
// same pages are fetched and stored, and neither crawl.log nor
// skipped.jsonl exists.
func TestCrawlLogOff(t *testing.T) {
	c := newTestCrawl(t, "127.61.2.1", 3, 10, func(cfg *Config, w *testweb.Web) {
		cfg.Logs.Write = false
		cfg.Filter.Scope = "host" // refusals too
	})
	c.run(t)
	if st := c.a.Stats(); st.Fetched.Load() == 0 || st.Stored.Load() == 0 {
		t.Fatalf("nothing crawled: %d fetched, %d stored", st.Fetched.Load(), st.Stored.Load())
	}
	for _, name := range []string{"crawl.log", "skipped.jsonl"} {
		if _, err := os.Stat(filepath.Join(c.cfg.Dir, "logs", name)); !os.IsNotExist(err) {
			t.Errorf("logs/%s with --crawl-log=false: %v", name, err)
		}
	}
}
