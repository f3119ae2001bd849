package store

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	gowarc "github.com/nlnwa/gowarc/v3"
)

// writeIndex writes lines as a CDXJ file in dir and returns its path.
func writeIndex(t *testing.T, dir, name string, lines ...string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// sumOf is the SHA-1 of s.
func sumOf(s string) [sha1.Size]byte { return sha1.Sum([]byte(s)) }

// TestDedupIndexFormats reads Petrel's own CDXJ lines and lines as pywb
// and warcio write them (bare base-32 digests, numeric fields, longer
// timestamps, hex digests): each 200 response's payload is found with its
// URI and date; revisit records and other statuses are skipped; malformed
// lines are counted and logged with file:line; the header line and blank
// lines are passed over.
func TestDedupIndexFormats(t *testing.T) {
	d := time.Date(2026, 11, 30, 10, 20, 30, 0, time.UTC)
	own := indexEntry{uri: "http://a.test/one", date: d, mime: "text/html", status: 200,
		digest: strings.TrimPrefix(sha1B32("one"), "sha1:"), length: 900, offset: 1234, filename: "petrel-1.warc.gz"}
	revisit := own
	revisit.uri, revisit.mime, revisit.digest = "http://a.test/again", "warc/revisit", strings.TrimPrefix(sha1B32("again"), "sha1:")
	b32 := func(s string) string { return strings.TrimPrefix(sha1B32(s), "sha1:") }
	twoHex := sumOf("two")
	lines := []string{
		"!meta 0 {\"format\":\"cdxj-gir\"}",
		string(own.line()),
		string(revisit.line()),
		`test,b)/two 20261129080000123 {"url": "http://b.test/two", "mime": "text/html", "status": 200, "digest": "` + hex.EncodeToString(twoHex[:]) + `", "length": 10, "offset": 20, "filename": "other.warc.gz"}`,
		`test,b)/three 20261128000000 {"url":"http://b.test/three","mime":"text/html","status":"200","digest":"` + b32("three") + `","length":"5","offset":"6","filename":"x.warc.gz"}`,
		`test,b)/missing 20261128000000 {"url":"http://b.test/missing","status":"404","digest":"sha1:` + b32("404") + `"}`,
		"",
		`test,b)/nojson 20261128000000`,
		`test,b)/badstamp 2026 {"url":"http://b.test/x","status":"200","digest":"` + b32("x") + `"}`,
		`test,b)/baddigest 20261128000000 {"url":"http://b.test/y","status":"200","digest":"sha256:abc"}`,
		`test,b)/badjson 20261128000000 {"url":`,
	}
	var logged bytes.Buffer
	p := writeIndex(t, t.TempDir(), "a.cdxj", lines...)
	x, err := LoadDedupIndex(p, 0, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	want := DedupStats{Files: 1, Lines: 9, Captures: 3, Malformed: 4, Skipped: 2}
	if x.Stats != want {
		t.Errorf("stats %+v, want %+v", x.Stats, want)
	}
	for payload, o := range map[string]Original{
		"one":   {URI: "http://a.test/one", Date: d},
		"two":   {URI: "http://b.test/two", Date: time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)},
		"three": {URI: "http://b.test/three", Date: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)},
	} {
		if got, ok := x.Lookup(sumOf(payload)); !ok || got != o {
			t.Errorf("Lookup(%s) = %+v, %v; want %+v", payload, got, ok, o)
		}
	}
	for _, payload := range []string{"again", "404", "never"} {
		if got, ok := x.Lookup(sumOf(payload)); ok {
			t.Errorf("Lookup(%s) = %+v: found", payload, got)
		}
	}
	for n := 8; n <= 11; n++ {
		if at := fmt.Sprintf("%s:%d", p, n); !strings.Contains(logged.String(), at) {
			t.Errorf("log does not name %s:\n%s", at, logged.String())
		}
	}
	if x.Bytes() < 3*40 {
		t.Errorf("Bytes() = %d", x.Bytes())
	}
}

// TestDedupIndexEarliestAndBound: of the captures of one payload the
// earliest is kept, whatever the files' order; past the bound, captures
// are left out and counted; a crawl directory stands for its merged
// index; a missing path or a directory without an index is an error.
func TestDedupIndexEarliestAndBound(t *testing.T) {
	line := func(uri, stamp, payload string) string {
		return fmt.Sprintf(`x %s {"url":%q,"status":"200","digest":%q}`, stamp, uri, sha1B32(payload))
	}
	crawl := t.TempDir()
	idx := filepath.Dir(MergedIndex(crawl))
	writeIndex(t, idx, "index.cdxj",
		line("http://late.test/", "20261201000000", "p"),
		line("http://early.test/", "20261101000000", "p"),
		line("http://q.test/", "20261101000000", "q"),
		line("http://r.test/", "20261101000000", "r"))
	x, err := LoadDedupIndex(crawl, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := x.Lookup(sumOf("p")); !ok || o.URI != "http://early.test/" {
		t.Errorf("Lookup(p) = %+v, %v; want the earliest capture", o, ok)
	}
	small, err := LoadDedupIndex(MergedIndex(crawl), 2, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if st := small.Stats; st.Captures != 2 || st.LeftOut != 1 {
		t.Errorf("bound 2: %+v", st)
	}
	if _, err := LoadDedupIndex(filepath.Join(crawl, "nothing.cdxj"), 0, nil); err == nil {
		t.Error("a missing file loaded")
	}
	if _, err := LoadDedupIndex(t.TempDir(), 0, nil); err == nil || !strings.Contains(err.Error(), "no *.cdxj") {
		t.Errorf("an empty directory: %v", err)
	}
}

// priorMap is a Prior of a test.
type priorMap map[[sha1.Size]byte]Original

func (m priorMap) Lookup(sum [sha1.Size]byte) (Original, bool) { o, ok := m[sum]; return o, ok }

// TestWriterPrior: a 200 whose payload an earlier crawl stored is a
// revisit record (identical-payload-digest) naming that capture's URI and
// date and no WARC-Refers-To, indexed as warc/revisit; so is a second
// fetch of it in this crawl; a 404 with that payload, and a payload the
// earlier crawl lacks, are stored in full, and a duplicate of the latter
// refers to this crawl's record.
func TestWriterPrior(t *testing.T) {
	opts := testOptions(t)
	opts.Index = true
	earlier := time.Date(2026, 11, 30, 10, 20, 30, 0, time.UTC)
	opts.Prior = priorMap{sumOf("known"): {URI: "http://old.test/k", Date: earlier}}
	w, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	ok200 := response("200 OK", "Content-Length: 5\r\n", "known")
	steps := []struct {
		uri       string
		resp      []byte
		prior     bool
		recordFor string // "" a response record; else what WARC-Refers-To is
	}{
		{"http://a.test/1", ok200, true, "-"},
		{"http://a.test/2", ok200, true, "-"},
		{"http://a.test/3", response("404 Not Found", "Content-Length: 5\r\n", "known"), false, ""},
		{"http://a.test/4", response("200 OK", "Content-Length: 5\r\n", "fresh"), false, ""},
		{"http://a.test/5", response("200 OK", "Content-Length: 5\r\n", "fresh"), false, "4"},
	}
	ids := map[string]string{}
	for i, s := range steps {
		res, err := w.Write(&Exchange{TargetURI: s.uri, Request: request("/"), Response: s.resp})
		if err != nil || res.Prior != s.prior || res.Revisit != (s.recordFor != "") {
			t.Fatalf("step %d: %+v, %v", i+1, res, err)
		}
		if s.prior && res.Omitted != 5 {
			t.Errorf("step %d: Omitted %d, want 5", i+1, res.Omitted)
		}
		ids[fmt.Sprint(i+1)] = res.RecordID
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := WARCFiles([]string{opts.Dir})
	if err != nil || len(files) != 1 {
		t.Fatalf("WARC files %v, %v", files, err)
	}
	path := files[0]
	checkPriorRecords(t, readWARC(t, path), ids)
	cdxj, err := os.ReadFile(fileIndexName(path))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(cdxj), `"mime":"warc/revisit"`); n != 3 {
		t.Errorf("%d CDXJ lines of revisits, want 3:\n%s", n, cdxj)
	}
	if _, err := CheckFile(path); err != nil {
		t.Fatal(err)
	}
}

// checkPriorRecords checks the records TestWriterPrior wrote.
func checkPriorRecords(t *testing.T, recs []readRecord, ids map[string]string) {
	t.Helper()
	if len(recs) != 11 {
		t.Fatalf("%d records, want warcinfo and 5 exchanges", len(recs))
	}
	for _, i := range []int{2, 4} {
		rv := recs[i]
		if rv.typ != gowarc.Revisit || len(rv.validation) != 0 {
			t.Fatalf("record %d: %v (validation %v)", i, rv.typ, rv.validation)
		}
		for k, want := range map[string]string{
			gowarc.WarcProfile:           "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest",
			gowarc.WarcRefersTo:          "",
			gowarc.WarcRefersToTargetURI: "http://old.test/k",
			gowarc.WarcRefersToDate:      "2026-11-30T10:20:30.000000Z",
			gowarc.WarcPayloadDigest:     sha1B32("known"),
		} {
			if got := rv.header.Get(k); got != want {
				t.Errorf("record %d: %s = %q, want %q", i, k, got, want)
			}
		}
	}
	if recs[6].typ != gowarc.Response || recs[8].typ != gowarc.Response {
		t.Errorf("404 and a new payload stored as %v and %v, want responses", recs[6].typ, recs[8].typ)
	}
	if rv := recs[10]; rv.typ != gowarc.Revisit || rv.header.Get(gowarc.WarcRefersTo) != ids["4"] {
		t.Errorf("duplicate of this crawl's payload: %v refers to %q, want %q", rv.typ, rv.header.Get(gowarc.WarcRefersTo), ids["4"])
	}
}

// BenchmarkDedupIndexLoad loads an index of 200,000 captures of distinct
// payloads (URLs of about 45 bytes) and reports the Go heap it holds per
// capture and the load time per line (wall, and CPU of the process: the
// GC's included).
func BenchmarkDedupIndexLoad(b *testing.B) {
	const n = 200_000
	p := filepath.Join(b.TempDir(), "big.cdxj")
	var buf bytes.Buffer
	for i := range n {
		uri := fmt.Sprintf("http://host%04d.example.test/page/%07d.html", i%5000, i)
		e := indexEntry{uri: uri, date: time.Unix(1.7e9+int64(i), 0), mime: "text/html", status: 200,
			digest: strings.TrimPrefix(sha1B32(uri), "sha1:"), length: 1000, offset: int64(i) * 1000, filename: "petrel-x.warc.gz"}
		buf.Write(e.line())
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	var cpu0 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &cpu0)
	b.ResetTimer()
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		x, err := LoadDedupIndex(p, 0, slog.New(slog.DiscardHandler))
		if err != nil || x.Stats.Captures != n {
			b.Fatalf("%+v, %v", x.Stats, err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-bytes/capture")
		b.ReportMetric(float64(x.Bytes())/n, "index-bytes/capture")
		runtime.KeepAlive(x)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/line")
	var cpu1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &cpu1)
	used := time.Duration(cpu1.Utime.Nano() + cpu1.Stime.Nano() - cpu0.Utime.Nano() - cpu0.Stime.Nano())
	b.ReportMetric(float64(used.Nanoseconds())/float64(b.N*n), "cpu-ns/line")
}

// FuzzCDXJFields: wherever the scan of flat JSON reads a line's JSON, it
// reads what encoding/json reads.
func FuzzCDXJFields(f *testing.F) {
	for _, s := range []string{
		`{"url":"http://a.test/","mime":"text/html","status":"200","digest":"ABC","length":"1","offset":"2","filename":"f.warc.gz"}`,
		`{"url": "http://a.test/", "status": 200, "length": 10, "offset": -0}`,
		`{"URL":"x","url":"y","Status":"404"}`,
		`{"url":"a","status":2.5}`, `{"url":5}`, `{"url":"a",}`, `{}`, ` { } `, `{"url":"é"}`,
		`{"url":"a\"b"}`, `{"url":"a","x":{"y":1}}`, `{"url":"a","x":true}`, `{"status":01}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, js []byte) {
		var fast, slow cdxjFields
		if !scanFlatJSON(js, &fast) {
			return
		}
		if err := json.Unmarshal(js, &slow); err != nil || fast != slow {
			t.Errorf("%q: scan %+v, encoding/json %+v (%v)", js, fast, slow, err)
		}
	})
}
