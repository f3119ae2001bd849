package store

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// writeCrawl writes n exchanges over several rotated files into dir with
// the writer's own index on (a tiny budget, so that runs spill), and
// returns the WARC files.
func writeCrawl(t *testing.T, dir string, n int) []string {
	t.Helper()
	opts := testOptions(t)
	opts.Dir = dir
	opts.Index = true
	opts.IndexBudget = 700
	opts.MaxFileBytes = 4 << 10
	w, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	d := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range n {
		// Keys interleave across files; some pages repeat a payload
		// (revisits), some are 404s, one URL has a query with "&".
		u := fmt.Sprintf("http://h%d.example.test/p%d?b=%d&a=%%3C%d%%3E", i%7, (n-i)%11, i, i)
		body := fmt.Sprintf("<title>page %d</title>%s", i%13, strings.Repeat("x", 200+i))
		status, ct := "200 OK", "Content-Type: Text/HTML; charset=utf-8\r\n"
		if i%5 == 0 {
			status, ct = "404 Not Found", ""
		}
		ex := &Exchange{TargetURI: u, IP: "127.0.0.1", Date: d.Add(time.Duration(i) * time.Second),
			Request: request("/"), Response: response(status, ct, body)}
		if i%9 == 4 {
			ex.Response = response("200 OK", ct, "same payload for many")
		}
		if _, err := w.Write(ex); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := WARCFiles([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("%d WARC files; want several", len(files))
	}
	return files
}

func cdxjOf(t *testing.T, paths ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := WriteCDXJ(paths, &out, IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// checkSorted fails unless text's lines are in LC_ALL=C order, checked here
// and, when sort(1) is installed, by "sort -c".
func checkSorted(t *testing.T, what, text string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if !slices.IsSorted(lines) {
		t.Errorf("%s is not sorted", what)
	}
	if _, err := exec.LookPath("sort"); err != nil {
		return
	}
	cmd := exec.Command("sort", "-c")
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("LC_ALL=C sort -c on %s: %v: %s", what, err, out)
	}
}

func TestWriteCDXJSortedAcrossFilesAndDirs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "warc")
	files := writeCrawl(t, dir, 60)
	whole := cdxjOf(t, dir)
	checkSorted(t, "cdxj of a directory", whole)
	if got := cdxjOf(t, files...); got != whole {
		t.Error("cdxj of the files differs from cdxj of their directory")
	}
	var each []string
	for _, f := range files {
		each = append(each, strings.Split(strings.TrimSpace(cdxjOf(t, f)), "\n")...)
	}
	slices.Sort(each)
	if strings.Join(each, "\n")+"\n" != whole {
		t.Error("cdxj of a directory is not the sorted union of its files' indexes")
	}
	if n := strings.Count(whole, "\n"); n != 60 {
		t.Errorf("%d index lines; want 60", n)
	}
	if !strings.Contains(whole, `?b=1&a=%3C1%3E","mime":"Text/HTML","status":"200"`) {
		t.Errorf("index escapes like Go, not like JSON.stringify, or lowers the mime:\n%s", whole)
	}
	if err := WriteCDXJ([]string{filepath.Join(dir, "missing")}, &bytes.Buffer{}, IndexOptions{}); err == nil {
		t.Error("cdxj of a missing file succeeded")
	}
}

// TestWriterIndex: the index the writer keeps beside each file equals the
// index read back from the file, and IndexCrawl merges them into
// indexes/index.cdxj, rebuilding a missing or stale one.
func TestWriterIndex(t *testing.T) {
	crawl := t.TempDir()
	files := writeCrawl(t, filepath.Join(crawl, "warc"), 80)
	for _, f := range files {
		got, err := os.ReadFile(fileIndexName(f))
		if err != nil {
			t.Fatal(err)
		}
		if want := cdxjOf(t, f); string(got) != want {
			t.Errorf("%s: the writer's index\n%s\ndiffers from the file's\n%s", filepath.Base(f), got, want)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(crawl, "warc", ".cdxj-run-*")); len(left) > 0 {
		t.Errorf("sort runs left behind: %v", left)
	}
	os.Remove(fileIndexName(files[1]))
	old := time.Now().Add(-time.Hour)
	os.Chtimes(fileIndexName(files[2]), old, old) // older than its WARC file: rebuilt
	os.WriteFile(fileIndexName(files[2]), []byte("stale 1 {}\n"), 0o644)
	os.Chtimes(fileIndexName(files[2]), old, old)
	rep, err := IndexCrawl(crawl, IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := rep.Lines
	merged, err := os.ReadFile(MergedIndex(crawl))
	if err != nil {
		t.Fatal(err)
	}
	if want := cdxjOf(t, filepath.Join(crawl, "warc")); string(merged) != want || n != 80 {
		t.Errorf("merged index (%d lines) differs from the cdxj of the WARC files:\n%s\nwant\n%s", n, merged, want)
	}
	checkSorted(t, "indexes/index.cdxj", string(merged))
	if cdxjOf(t, crawl) != string(merged) {
		t.Error("cdxj of a crawl directory is not that of its warc/")
	}
}

// TestIndexCrawlSkipsCutFile: a finished WARC file cut short (its index
// gone, or older than the cut) is left out of the merged index and named
// in the report; the other files are indexed.
func TestIndexCrawlSkipsCutFile(t *testing.T) {
	crawl := t.TempDir()
	files := writeCrawl(t, filepath.Join(crawl, "warc"), 80)
	if len(files) < 3 {
		t.Fatalf("%d WARC files; want at least 3", len(files))
	}
	cut := files[1]
	fi, err := os.Stat(cut)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(cut, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	os.Remove(fileIndexName(cut))
	rep, err := IndexCrawl(crawl, IndexOptions{})
	if err != nil {
		t.Fatalf("IndexCrawl with a file cut short: %v", err)
	}
	if len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Error(), filepath.Base(cut)) {
		t.Fatalf("skipped %v; want %s", rep.Skipped, filepath.Base(cut))
	}
	others := slices.Concat(files[:1], files[2:])
	merged, _ := os.ReadFile(MergedIndex(crawl))
	if want := cdxjOf(t, others...); string(merged) != want || rep.Lines != int64(strings.Count(want, "\n")) {
		t.Errorf("merged index (%d lines) is not that of the files not cut:\n%s\nwant\n%s", rep.Lines, merged, want)
	}
}

func TestAppendJSString(t *testing.T) {
	for in, want := range map[string]string{
		"http://a.test/?x=1&y=<2>": `"http://a.test/?x=1&y=<2>"`,
		"q\"\\":                    `"q\"\\"`,
		"\x00\x1f\t\n\r\b\f":       `"\u0000\u001f\t\n\r\b\f"`,
		"\u2028é":                  "\"\u2028é\"",
		"bad\xff":                  "\"bad\ufffd\"",
	} {
		if got := string(appendJSString(nil, in)); got != want {
			t.Errorf("appendJSString(%q) = %s; want %s", in, got, want)
		}
		var back string
		if err := json.Unmarshal([]byte(want), &back); err != nil {
			t.Errorf("%s is not JSON: %v", want, err)
		}
	}
}

// TestWarcioAgrees compares the writer's merged index with warcio's
// cdx-index of the same files, byte for byte after sorting.
func TestWarcioAgrees(t *testing.T) {
	warcio := WarcioPath()
	if warcio == "" {
		if os.Getenv("PETREL_REQUIRE_BROWSER") == "1" {
			t.Fatal("warcio not found: set PETREL_WARCIO (npm install warcio@2.4.11)")
		}
		t.Skip("warcio not found: npm install warcio@2.4.11 and set PETREL_WARCIO to node_modules/.bin/warcio")
	}
	crawl := t.TempDir()
	files := writeCrawl(t, filepath.Join(crawl, "warc"), 40)
	if _, err := IndexCrawl(crawl, IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(warcio, append([]string{"cdx-index"}, files...)...).Output()
	if err != nil {
		t.Fatalf("warcio cdx-index: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	slices.Sort(lines)
	merged, _ := os.ReadFile(MergedIndex(crawl))
	if got, want := string(merged), strings.Join(lines, "\n")+"\n"; got != want {
		t.Errorf("index differs from warcio cdx-index:\n%s\nwarcio:\n%s", got, want)
	}
}

// TestCat finds captures by URL and date, prints records, and decodes
// payloads: chunking and gzip undone, a revisit resolved to its original.
func TestCat(t *testing.T) {
	opts := testOptions(t)
	opts.Index = true
	w, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("<p>hello, archive</p>"))
	zw.Close()
	chunked := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", gz.Len(), gz.Bytes())
	d := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	exs := []*Exchange{
		{TargetURI: "http://a.test/x?b=1&a=2", Date: d, Request: request("/x"),
			Response: response("200 OK", "Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", chunked)},
		{TargetURI: "http://a.test/x?b=1&a=2", Date: d.Add(48 * time.Hour), Request: request("/x"),
			Response: response("200 OK", "Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", chunked)},
		{TargetURI: "http://a.test/y", Date: d, Request: request("/y"), Response: response("404 Not Found", "", "gone")},
	}
	var res []Result
	for _, ex := range exs {
		r, err := w.Write(ex)
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, r)
	}
	w.Close()
	crawl := filepath.Dir(opts.Dir)
	for _, indexed := range []bool{false, true} {
		if indexed {
			if _, err := IndexCrawl(crawl, IndexOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		a, err := OpenArchive(crawl)
		if err != nil {
			t.Fatal(err)
		}
		if (a.Index != "") != indexed {
			t.Fatalf("OpenArchive used the index: %v; want %v", a.Index != "", indexed)
		}
		latest, err := a.FindCapture("http://A.test/x?a=2&b=1", time.Time{})
		if err != nil || latest.Offset != res[1].Offset || latest.Type != "revisit" {
			t.Fatalf("latest capture %+v, %v; want the revisit at %d", latest, err, res[1].Offset)
		}
		first, err := a.FindCapture("http://a.test/x?b=1&a=2", d.Add(time.Hour))
		if err != nil || first.Offset != res[0].Offset {
			t.Fatalf("capture closest to the first day %+v, %v; want offset %d", first, err, res[0].Offset)
		}
		rec, err := ReadRecord(first.Path, first.Offset)
		if err != nil || !bytes.HasPrefix(rec, []byte("WARC/1.1\r\nWARC-Type: response\r\n")) || !bytes.HasSuffix(rec, []byte(chunked+"\r\n\r\n")) {
			t.Fatalf("record %q, %v", rec, err)
		}
		for _, c := range []Capture{first, latest} {
			p, err := a.ReadPayload(c.Path, c.Offset)
			if err != nil || p.Err != nil || string(p.Body) != "<p>hello, archive</p>" || p.Status != 200 {
				t.Errorf("payload of %s capture: %q (%d), %v, %v", c.Type, p.Body, p.Status, err, p.Err)
			}
		}
		if _, err := a.FindCapture("http://a.test/missing", time.Time{}); err == nil || !strings.Contains(err.Error(), "not in the archive") {
			t.Errorf("missing URL: %v", err)
		}
	}
	if _, err := ReadRecord(filepath.Join(opts.Dir, res[0].File), res[0].Offset+3); err == nil {
		t.Error("ReadRecord at a wrong offset succeeded")
	}
	for s, ok := range map[string]bool{"20240102": true, "20240102030405": true, "2024-01-02T03:04:05Z": true, "2024": true, "202": false, "yesterday": false} {
		if _, err := ParseCaptureDate(s); (err == nil) != ok {
			t.Errorf("ParseCaptureDate(%q): %v", s, err)
		}
	}
}

// TestWriterIndexLanguages: an exchange's Languages end its CDXJ line as
// the languages field, after the filename, as Common Crawl's index has
// it; an exchange without them has no such field, and the index made
// again from the WARC file has none.
func TestWriterIndexLanguages(t *testing.T) {
	opts := testOptions(t)
	opts.Index = true
	w, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	d := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, langs := range []string{"eng,fra", ""} {
		ex := &Exchange{TargetURI: fmt.Sprintf("http://a.test/%d", i), IP: "127.0.0.1", Date: d, Request: request("/"),
			Response: response("200 OK", "Content-Type: text/html\r\n", fmt.Sprint("page ", i)), Languages: langs}
		if _, err := w.Write(ex); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(opts.Dir, "*.warc.gz"))
	if len(files) != 1 {
		t.Fatalf("WARC files %v", files)
	}
	got, err := os.ReadFile(fileIndexName(files[0]))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], `.warc.gz","languages":"eng,fra"}`) || strings.Contains(lines[1], "languages") {
		t.Errorf("index lines:\n%s", got)
	}
	if rebuilt := cdxjOf(t, files[0]); strings.Contains(rebuilt, "languages") {
		t.Errorf("index of the WARC file has languages:\n%s", rebuilt)
	}
}

// FuzzAppendJSString checks appendJSString against appendJSStringRef, the
// same escaping done a byte at a time.
func FuzzAppendJSString(f *testing.F) {
	for _, s := range []string{"http://a.test/?x=1&y=<2>", "q\"\\", "\x00\x1f\t\n\r\b\f", "\u2028é", "bad\xff", "\xef\xbf\xbd\xe2\x82", ""} {
		f.Add("x", s)
	}
	f.Fuzz(func(t *testing.T, prefix, s string) {
		if got, want := appendJSString([]byte(prefix), s), appendJSStringRef([]byte(prefix), s); !bytes.Equal(got, want) {
			t.Fatalf("appendJSString(%q) = %s; want %s", s, got, want)
		}
	})
}

// appendJSStringRef is appendJSString a byte at a time.
func appendJSStringRef(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\b':
			b = append(b, `\b`...)
		case c == '\t':
			b = append(b, `\t`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '\f':
			b = append(b, `\f`...)
		case c == '\r':
			b = append(b, `\r`...)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
		i++
	}
	return append(b, '"')
}
