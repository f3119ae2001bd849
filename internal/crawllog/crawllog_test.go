package crawllog

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	t0    = time.Date(2026, 12, 1, 7, 35, 19, 123e6, time.UTC)
	start = time.Date(2026, 12, 1, 7, 35, 18, 901e6, time.UTC)
)

// TestGolden pins the columns to Heritrix's: status padded to 5, size to
// 10, fetcher to three digits, start as 17 digits.
func TestGolden(t *testing.T) {
	e := Entry{Time: t0, Status: 200, Size: 15829, URL: "http://a.test/x.html", HopPath: "LL",
		Via: "http://a.test/", MIME: "Text/HTML; charset=utf-8", Fetcher: 25, Start: start,
		Duration: 222 * time.Millisecond, Digest: "sha1:7AJUMSDTOMT4FN7MBFGGNJU3Z56MLCMW",
		Seed: "http://a.test/", Annotations: []string{"2t", "warc:p-1.warc.gz@1234"}}
	want := "2026-12-01T07:35:19.123Z   200      15829 http://a.test/x.html LL http://a.test/ text/html #025 20261201073518901+222 sha1:7AJUMSDTOMT4FN7MBFGGNJU3Z56MLCMW http://a.test/ 2t,warc:p-1.warc.gz@1234\n"
	if got := string(e.AppendTo(nil)); got != want {
		t.Errorf("line\n got %q\nwant %q", got, want)
	}
	r := Entry{Time: t0, Status: StatusRobots, Size: -1, URL: "http://a.test/private/x", HopPath: "L",
		Via: "http://a.test/", NoResponse: true, Annotations: []string{"skip:robots"}}
	want = "2026-12-01T07:35:19.123Z -9998          - http://a.test/private/x L http://a.test/ unknown #000 - - - skip:robots\n"
	if got := string(r.AppendTo(nil)); got != want {
		t.Errorf("refusal line\n got %q\nwant %q", got, want)
	}
}

// TestParseHeritrix reads a line as Heritrix writes it.
func TestParseHeritrix(t *testing.T) {
	l, err := Parse("2011-06-23T17:12:08.802Z   200       1299 http://b.test/robots.txt LREP http://b.test/cgi?isbn=1 text/plain #014 20110623171208574+225 sha1:YIUOKDGOLGI5JYHDTXRFFQ5FF4N2EJRV - -")
	if err != nil {
		t.Fatal(err)
	}
	if l.Status != 200 || l.Size != 1299 || l.HopPath != "LREP" || l.Fetcher != 14 || l.Duration != 225*time.Millisecond ||
		l.Start.Format("20060102150405.000") != "20110623171208.574" || l.Seed != "" || l.Annotations != nil {
		t.Errorf("parsed %+v", l)
	}
}

func TestRoundTrip(t *testing.T) {
	entries := []Entry{
		{Time: t0, Status: 404, Size: 0, URL: "https://a.test/a b", HopPath: "LLE", Via: "https://a.test/", MIME: "",
			Fetcher: 256, Start: start, Duration: 3 * time.Millisecond, Annotations: []string{"timeTrunc"}},
		{Time: t0, Status: StatusTimeout, Size: -1, URL: "http://a.test/slow", NoResponse: true, Fetcher: 3,
			Start: start, Duration: 10 * time.Second, Annotations: []string{"3t", "err:timeout"}},
		{Time: t0, Status: 301, Size: 12, URL: "http://a.test/", Fetcher: 1, Start: start, MIME: "text/html",
			Digest: "sha1:AAAA", Seed: "http://a.test/"},
	}
	for _, e := range entries {
		line := string(e.AppendTo(nil))
		l, err := Parse(line)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		wantURL := strings.ReplaceAll(e.URL, " ", "%20")
		if l.Status != e.Status || l.Size != e.Size || l.URL != wantURL || l.HopPath != e.HopPath || l.Via != e.Via ||
			l.Fetcher != e.Fetcher || !l.Start.Equal(e.Start) || l.Duration != e.Duration.Truncate(time.Millisecond) ||
			l.Digest != e.Digest || l.Seed != e.Seed || !reflect.DeepEqual(l.Annotations, e.Annotations) {
			t.Errorf("round trip of %+v gave %+v", e, l)
		}
	}
	for _, bad := range []string{"", "x", strings.Repeat("- ", 12), "2026-12-01T07:35:19.123Z 200 - http://a/ Q - text/html #001 - - - -"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestSkipJSON(t *testing.T) {
	for _, s := range []Skip{
		{Time: t0, URL: "http://a.test/\"q\"<&>\u2028\x01", Via: "http://a.test/", Reason: ReasonFilterSchedule, Rule: "not HostEquals(a.test)", Status: StatusOutOfScope},
		{Time: t0, URL: "http://a.test/\xff", Reason: ReasonRobots, Status: StatusRobots},
	} {
		line := s.AppendTo(nil)
		want, _ := json.Marshal(s)
		if string(line) != string(want)+"\n" {
			t.Errorf("skip line\n got %s want %s", line, want)
		}
		if _, err := ParseSkip(line); err != nil {
			t.Error(err)
		}
	}
}

func readLines(t *testing.T, paths ...string) []string {
	t.Helper()
	var out []string
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			out = append(out, sc.Text())
		}
		f.Close()
	}
	return out
}

// TestConcurrentRotated logs from many goroutines into small files: every
// line arrives once, whole, in a file no larger than the bound plus a
// line.
func TestConcurrentRotated(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Options{Dir: dir, MaxFileBytes: 8 << 10, BufferBytes: 4 << 10, FlushEvery: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 500
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				l.Fetch(&Entry{Status: 200, Size: int64(i), URL: fmt.Sprintf("http://w%d.test/%d", w, i), Fetcher: w + 1, MIME: "text/html"})
			}
		}()
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files := Files(filepath.Join(dir, "crawl.log"))
	if len(files) < 10 {
		t.Fatalf("%d files: crawl.log was not rotated", len(files))
	}
	seen := map[string]bool{}
	for _, p := range files {
		fi, _ := os.Stat(p)
		if fi.Size() > 8<<10+200 {
			t.Errorf("%s: %d bytes", p, fi.Size())
		}
		for _, line := range readLines(t, p) {
			pl, err := Parse(line)
			if err != nil {
				t.Fatal(err)
			}
			if seen[pl.URL] {
				t.Errorf("%s logged twice", pl.URL)
			}
			seen[pl.URL] = true
		}
	}
	if len(seen) != writers*each {
		t.Errorf("%d lines, want %d", len(seen), writers*each)
	}
	if f := l.Figures(); f.CrawlLines != writers*each {
		t.Errorf("figures %+v", f)
	}
	l.Fetch(&Entry{URL: "http://late.test/"}) // after Close: dropped, no panic
}

// TestSkippedCap: past the total cap, refusals are counted, not written;
// a repeated refusal is logged once; a reopened log keeps the cap.
func TestSkippedCap(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir, SkippedFileBytes: 2 << 10, SkippedTotalBytes: 10 << 10, FlushEvery: time.Millisecond}
	l, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	const n = 400
	for i := 0; i < n; i++ {
		u := fmt.Sprintf("http://a.test/%d", i)
		if !l.Refuse(&Entry{}, &Skip{URL: u, Via: "http://a.test/", Reason: ReasonScope}) {
			t.Fatalf("refusal %d not logged", i)
		}
		if l.Refuse(&Entry{}, &Skip{URL: u, Via: "http://a.test/", Reason: ReasonScope}) {
			t.Fatalf("repeated refusal %d logged again", i)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f := l.Figures()
	files := Files(filepath.Join(dir, "skipped.jsonl"))
	var total int64
	var lines []string
	for _, p := range files {
		fi, _ := os.Stat(p)
		total += fi.Size()
		lines = append(lines, readLines(t, p)...)
	}
	if total > 10<<10 {
		t.Errorf("skipped files hold %d bytes, over the cap", total)
	}
	if f.SkippedDropped == 0 || int64(len(lines))+f.SkippedDropped != n || f.SkippedLines != n {
		t.Errorf("%d lines written, %d dropped, %d logged; want %d in all", len(lines), f.SkippedDropped, f.SkippedLines, n)
	}
	for i, line := range lines {
		s, err := ParseSkip([]byte(line))
		if err != nil || s.URL != fmt.Sprintf("http://a.test/%d", i) || s.Status != StatusOutOfScope {
			t.Fatalf("line %d: %q (%v): the first refusals must be the ones kept", i, line, err)
		}
	}
	if got := len(readLines(t, filepath.Join(dir, "crawl.log"))); got != n {
		t.Errorf("crawl.log has %d refusal lines, want %d (its size is not capped)", got, n)
	}
	l, err = Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	l.Refuse(&Entry{}, &Skip{URL: "http://b.test/", Reason: ReasonRobots})
	l.Close()
	if f := l.Figures(); f.SkippedDropped != 1 {
		t.Errorf("reopened log over its cap: %+v", f)
	}
}

// TestSubscription: a subscriber sees new lines; a stalled one loses lines
// (counted) without slowing the writers.
func TestSubscription(t *testing.T) {
	l, err := Open(Options{Dir: t.TempDir(), FlushEvery: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	fast, stalled := l.Subscribe(1000), l.Subscribe(2)
	for i := 0; i < 100; i++ {
		l.Fetch(&Entry{Status: 200, URL: fmt.Sprintf("http://a.test/%d", i), MIME: "text/html"})
	}
	for i := 0; i < 100; i++ {
		select {
		case line := <-fast.Lines():
			if pl, err := Parse(line); err != nil || pl.URL != fmt.Sprintf("http://a.test/%d", i) {
				t.Fatalf("line %d: %q %v", i, line, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("line %d never came", i)
		}
	}
	fast.Close()
	fast.Close()
	l.Close()
	if stalled.Dropped() != 98 {
		t.Errorf("stalled subscriber dropped %d lines, want 98", stalled.Dropped())
	}
	n := 0
	for range stalled.Lines() {
		n++
	}
	if n != 2 {
		t.Errorf("stalled subscriber kept %d lines", n)
	}
	if f := l.Figures(); f.StreamDropped != 98 {
		t.Errorf("figures %+v", f)
	}
	stalled.Close()
	if _, ok := <-l.Subscribe(1).Lines(); ok {
		t.Error("a subscription after Close got a line")
	}
}

// BenchmarkFetch is the cost per page of a crawl.log line: formatting and
// appending on the crawl's goroutines, writing on the log's own. cpu-ns/op
// is the process's CPU time (every goroutine, the writer's included) per
// line, from getrusage.
func BenchmarkFetch(b *testing.B) {
	l, err := Open(Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	e := Entry{Status: 200, Size: 20480, URL: "http://host-17.test/page/42.html", HopPath: "LLL",
		Via: "http://host-17.test/page/41.html", MIME: "text/html; charset=utf-8", Fetcher: 12, Start: time.Now(),
		Duration: 3 * time.Millisecond, Digest: "sha1:7AJUMSDTOMT4FN7MBFGGNJU3Z56MLCMW", Seed: "http://host-17.test/",
		Annotations: []string{"warc:petrel-20261201073519-00001.warc.gz@123456789"}}
	b.ReportAllocs()
	cpu0 := processCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ec := e
			l.Fetch(&ec)
		}
	})
	l.Close() // the lines are written before the CPU is read
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkRefuse is the cost of a refused URL: a crawl.log line and a
// skipped.jsonl line.
func BenchmarkRefuse(b *testing.B) {
	l, err := Open(Options{Dir: b.TempDir(), SkippedTotalBytes: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	urls := make([]string, 1<<12)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://other-%d.test/page/%d.html", i%97, i)
	}
	b.ReportAllocs()
	cpu0 := processCPU()
	i := 0
	for b.Loop() {
		i++
		l.Refuse(&Entry{HopPath: "LL"}, &Skip{URL: urls[i%len(urls)] + strconv.Itoa(i), Via: "http://host-17.test/", Reason: ReasonScope, Rule: "--scope host"})
	}
	l.Close()
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// processCPU is the user and system CPU time of the process, in ns.
func processCPU() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// TestOff checks that a Log opened Off writes nothing, opens no file,
// counts nothing, ends a subscription at once and closes twice.
func TestOff(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Options{Off: true})
	if err != nil || !l.Off() {
		t.Fatalf("Open(Off): %v, off %v", err, l.Off())
	}
	l.Fetch(&Entry{URL: "http://a.test/", Status: 200})
	if l.Refuse(&Entry{}, &Skip{URL: "http://a.test/x", Reason: ReasonScope}) || l.Skip(&Skip{URL: "http://a.test/y", Reason: ReasonFilterStore}) {
		t.Error("an Off log logged a refusal")
	}
	if f := l.Figures(); f != (Figures{}) {
		t.Errorf("Figures = %+v", f)
	}
	sub := l.Subscribe(1)
	if _, open := <-sub.Lines(); open {
		t.Error("a subscription of an Off log delivered a line")
	}
	sub.Close()
	if err := l.Close(); err != nil || l.Close() != nil {
		t.Errorf("Close: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files written: %v", ents)
	}
}

// TestLanguagesGolden pins the annotation of a page's languages: after
// the others, the codes separated by ";", read back comma-separated.
func TestLanguagesGolden(t *testing.T) {
	e := Entry{Time: t0, Status: 200, Size: 15829, URL: "http://a.test/x.html", HopPath: "L", Via: "http://a.test/",
		MIME: "text/html", Fetcher: 1, Start: start, Duration: 5 * time.Millisecond,
		Annotations: []string{"warc:p-1.warc.gz@1234", Languages("eng,fra")}}
	want := "2026-12-01T07:35:19.123Z   200      15829 http://a.test/x.html L http://a.test/ text/html #001 20261201073518901+5 - - warc:p-1.warc.gz@1234,lang:eng;fra\n"
	line := string(e.AppendTo(nil))
	if line != want {
		t.Errorf("line\n got %q\nwant %q", line, want)
	}
	l, err := Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Languages(); got != "eng,fra" {
		t.Errorf("Languages() = %q, want eng,fra", got)
	}
	if w, _ := l.Annotation("warc"); w != "p-1.warc.gz@1234" {
		t.Errorf("warc annotation %q", w)
	}
	if Languages("") != "" || Languages("deu") != "lang:deu" {
		t.Error(`Languages("") or of one code`)
	}
	var none Line
	if none.Languages() != "" {
		t.Error("a line without the annotation has languages")
	}
}
