package store

import (
	"bytes"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gowarc "github.com/nlnwa/gowarc/v3"
)

func testOptions(t testing.TB) Options {
	t.Helper()
	return Options{
		Dir:             filepath.Join(t.TempDir(), "warc"),
		Software:        "Petrel/test",
		Operator:        "ops@example.org",
		IsPartOf:        "test-crawl",
		Robots:          "obey",
		UserAgent:       "Petrel/test (+http://example.test/bot)",
		DigestsExpected: 10_000,
		Logger:          slog.New(slog.DiscardHandler),
	}
}

func request(uri string) []byte {
	return []byte("GET " + uri + " HTTP/1.1\r\nHost: example.test\r\nUser-Agent: Petrel/test\r\n\r\n")
}

func response(status string, headers string, body string) []byte {
	return []byte("HTTP/1.1 " + status + "\r\n" + headers + "\r\n" + body)
}

func sha1B32(s string) string {
	sum := sha1.Sum([]byte(s))
	return sha1Digest(sum[:])
}

// readRecord is a record as readWARC read it.
type readRecord struct {
	typ        gowarc.RecordType
	header     *gowarc.WarcFields
	offset     int64
	block      []byte
	validation []error
}

// readWARC reads every record of a WARC file with gowarc (syntax and spec
// findings are kept in the records' validation, not fatal).
func readWARC(t *testing.T, path string) []readRecord {
	t.Helper()
	r, err := gowarc.NewWarcFileReader(path, 0,
		gowarc.WithSyntaxErrorPolicy(gowarc.ErrWarn),
		gowarc.WithSpecViolationPolicy(gowarc.ErrWarn),
		gowarc.WithUnknownRecordTypePolicy(gowarc.ErrFail))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []readRecord
	for {
		rec, err := r.Next()
		if err == io.EOF { // gowarc wraps io.EOF in errors about a record: only a bare one ends the file
			return out
		}
		if err != nil {
			t.Fatalf("%s: record %d: %v", path, len(out), err)
		}
		rr := readRecord{typ: rec.WarcRecord.Type(), header: rec.WarcRecord.WarcHeader(), offset: rec.Offset, validation: rec.Validation}
		if raw, err := rec.WarcRecord.Block().RawBytes(); err == nil {
			rr.block, _ = io.ReadAll(raw)
		}
		_ = rec.Close()
		out = append(out, rr)
	}
}

func warcFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".cdxj") { // an index beside them (Options.Index)
			names = append(names, filepath.Join(dir, e.Name()))
		}
	}
	return names
}

func TestRoundTrip(t *testing.T) {
	opts := testOptions(t)
	w, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	date := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.FixedZone("X", 3600))
	html := "<html><body>hello world</body></html>"
	chunkedBody := "7\r\n<html>h\r\n5;x=y\r\nello!\r\n0\r\n\r\n"
	gzipBody := "\x1f\x8b\x08\x00binary-not-really"
	tests := []struct {
		name        string
		ex          Exchange
		payload     string // expected payload digest input
		chunked     bool
		wantTrunc   string
		wantMime    string
		wantRevisit bool
	}{
		{"plain", Exchange{TargetURI: "http://example.test/a", IP: "127.0.0.1", Date: date,
			Request: request("/a"), Response: response("200 OK", "Content-Type: text/html\r\nContent-Length: 38\r\n", html)},
			html, false, "", "text/html", false},
		{"chunked", Exchange{TargetURI: "http://example.test/c", IP: "127.0.0.2", Date: date,
			Request: request("/c"), Response: response("200 OK", "Transfer-Encoding: chunked\r\n", chunkedBody)},
			"<html>hello!", true, "", "", false},
		{"content-encoded kept", Exchange{TargetURI: "http://example.test/g", IP: "::1", Date: date,
			Request: request("/g"), Response: response("200 OK", "Content-Encoding: gzip\r\n", gzipBody)},
			gzipBody, false, "", "", false},
		{"truncated", Exchange{TargetURI: "http://example.test/t", IP: "127.0.0.1", Date: date,
			Request: request("/t"), Response: response("200 OK", "Content-Length: 100000\r\n", "partial"), Truncated: "length"},
			"partial", false, "length", "", false},
		{"chunked cut short", Exchange{TargetURI: "http://example.test/cc", IP: "127.0.0.1", Date: date,
			Request: request("/cc"), Response: response("200 OK", "Transfer-Encoding: chunked\r\n", "a\r\n0123"), Truncated: "disconnect"},
			"0123", true, "disconnect", "", false},
		{"not found", Exchange{TargetURI: "http://example.test/404", IP: "127.0.0.1", Date: date,
			Request: request("/404"), Response: response("404 Not Found", "", html)},
			html, false, "", "", false},
	}
	results := make([]Result, len(tests))
	for i, tt := range tests {
		res, err := w.Write(&tt.ex)
		if err != nil {
			t.Fatalf("%s: Write: %v", tt.name, err)
		}
		if res.Revisit != tt.wantRevisit {
			t.Errorf("%s: Revisit = %v", tt.name, res.Revisit)
		}
		if res.PayloadDigest != sha1B32(tt.payload) {
			t.Errorf("%s: PayloadDigest = %s; want %s", tt.name, res.PayloadDigest, sha1B32(tt.payload))
		}
		if res.BlockDigest != sha1B32(string(tt.ex.Response)) {
			t.Errorf("%s: BlockDigest = %s", tt.name, res.BlockDigest)
		}
		results[i] = res
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := w.Write(&tests[0].ex); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close: %v; want ErrClosed", err)
	}

	files := warcFiles(t, opts.Dir)
	if len(files) != 1 || !regexp.MustCompile(`/petrel-\d{14}-00000\.warc\.gz$`).MatchString(files[0]) {
		t.Fatalf("files = %v; want one petrel-TIMESTAMP-00000.warc.gz", files)
	}
	if results[0].File != filepath.Base(files[0]) {
		t.Errorf("Result.File = %q; want %q", results[0].File, filepath.Base(files[0]))
	}
	recs := readWARC(t, files[0])
	if len(recs) != 1+2*len(tests) {
		t.Fatalf("%d records; want %d", len(recs), 1+2*len(tests))
	}
	info := recs[0]
	if info.typ != gowarc.Warcinfo || len(info.validation) != 0 {
		t.Fatalf("first record %v, validation %v", info.typ, info.validation)
	}
	for _, want := range []string{"software: Petrel/test\r\n", "format: WARC File Format 1.1\r\n", "conformsTo: http://iipc.github.io/", "operator: ops@example.org\r\n", "hostname: ", "isPartOf: test-crawl\r\n", "robots: obey\r\n", "http-header-user-agent: Petrel/test (+http://example.test/bot)\r\n"} {
		if !bytes.Contains(info.block, []byte(want)) {
			t.Errorf("warcinfo block %q lacks %q", info.block, want)
		}
	}
	if info.header.Get(gowarc.WarcFilename) != filepath.Base(files[0]) {
		t.Errorf("WARC-Filename = %q", info.header.Get(gowarc.WarcFilename))
	}
	for i, tt := range tests {
		req, resp := recs[1+2*i], recs[2+2*i]
		if req.typ != gowarc.Request || resp.typ != gowarc.Response {
			t.Fatalf("%s: types %v, %v", tt.name, req.typ, resp.typ)
		}
		if len(req.validation) != 0 {
			t.Errorf("%s: request validation: %v", tt.name, req.validation)
		}
		// gowarc digests a chunked payload as transferred; everything
		// else must validate cleanly.
		if !tt.chunked && len(resp.validation) != 0 {
			t.Errorf("%s: response validation: %v", tt.name, resp.validation)
		}
		if tt.chunked {
			for _, v := range resp.validation {
				if !strings.HasPrefix(v.Error(), "payload:") {
					t.Errorf("%s: response validation: %v", tt.name, v)
				}
			}
		}
		rh, qh := resp.header, req.header
		if rh.Get(gowarc.WarcConcurrentTo) != qh.Get(gowarc.WarcRecordID) || qh.Get(gowarc.WarcConcurrentTo) != rh.Get(gowarc.WarcRecordID) {
			t.Errorf("%s: records not linked by WARC-Concurrent-To", tt.name)
		}
		for _, h := range []*gowarc.WarcFields{rh, qh} {
			if h.Get(gowarc.WarcTargetURI) != tt.ex.TargetURI || h.Get(gowarc.WarcIPAddress) != tt.ex.IP {
				t.Errorf("%s: target %q ip %q", tt.name, h.Get(gowarc.WarcTargetURI), h.Get(gowarc.WarcIPAddress))
			}
			if got := h.Get(gowarc.WarcDate); got != "2024-05-06T06:08:09.123456Z" {
				t.Errorf("%s: WARC-Date = %q", tt.name, got)
			}
		}
		if got := qh.Get(gowarc.ContentType); got != "application/http;msgtype=request" {
			t.Errorf("%s: request Content-Type %q", tt.name, got)
		}
		if got := rh.Get(gowarc.ContentType); got != "application/http;msgtype=response" {
			t.Errorf("%s: response Content-Type %q", tt.name, got)
		}
		if got := rh.Get(gowarc.WarcPayloadDigest); got != sha1B32(tt.payload) {
			t.Errorf("%s: WARC-Payload-Digest = %q; want %q", tt.name, got, sha1B32(tt.payload))
		}
		if got := rh.Get(gowarc.WarcTruncated); got != tt.wantTrunc {
			t.Errorf("%s: WARC-Truncated = %q; want %q", tt.name, got, tt.wantTrunc)
		}
		if !bytes.Equal(resp.block, tt.ex.Response) || !bytes.Equal(req.block, tt.ex.Request) {
			t.Errorf("%s: blocks differ from what was sent/received", tt.name)
		}
		if resp.offset != results[i].Offset {
			t.Errorf("%s: Result.Offset = %d; record at %d", tt.name, results[i].Offset, resp.offset)
		}
	}
	n, err := CheckFile(files[0])
	if err != nil || n != len(recs) {
		t.Fatalf("CheckFile = %d, %v; want %d, nil", n, err, len(recs))
	}
	st := w.Stats()
	if st.Records != int64(len(recs)) || st.Files != 1 || st.Revisits != 0 || st.CompressedBytes != fileSize(t, files[0]) || st.UncompressedBytes <= st.CompressedBytes/2 {
		t.Errorf("Stats = %+v", st)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestCheckFileDetectsCorruption(t *testing.T) {
	opts := testOptions(t)
	opts.GzipLevel = 1
	w, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("chunk of text ", 100)
	if _, err := w.Write(&Exchange{TargetURI: "http://example.test/", Request: request("/"),
		Response: response("200 OK", "Transfer-Encoding: chunked\r\n", fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body))}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := warcFiles(t, opts.Dir)[0]
	if _, err := CheckFile(path); err != nil {
		t.Fatalf("CheckFile on a good file: %v", err)
	}
	// Rewrite the file with the payload digest of the chunked record
	// changed; CheckFile must catch it.
	r, err := gowarc.NewWarcFileReader(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for {
		rec, err := r.Next()
		if err == io.EOF { // gowarc wraps io.EOF in errors about a record: only a bare one ends the file
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.WarcRecord.Type() == gowarc.Response {
			rec.WarcRecord.WarcHeader().Set(gowarc.WarcPayloadDigest, sha1B32("something else"))
		}
		if _, _, err := gowarc.NewMarshaler().Marshal(&out, rec.WarcRecord, 0); err != nil {
			t.Fatal(err)
		}
		rec.Close()
	}
	r.Close()
	bad := filepath.Join(t.TempDir(), "bad.warc")
	if err := os.WriteFile(bad, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckFile(bad); err == nil || !strings.Contains(err.Error(), "de-chunked digest") {
		t.Fatalf("CheckFile on a bad digest = %v; want a de-chunked digest error", err)
	}
}

func TestRevisit(t *testing.T) {
	opts := testOptions(t)
	w, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	d1 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	d2 := d1.Add(time.Hour)
	body := "<html>same page everywhere</html>"
	type step struct {
		ex      Exchange
		revisit bool
	}
	steps := []step{
		{Exchange{TargetURI: "http://a.test/", Date: d1, Request: request("/"), Response: response("200 OK", "Content-Type: text/html\r\n", body)}, false},
		{Exchange{TargetURI: "http://b.test/", Date: d2, Request: request("/"), Response: response("200 OK", "Content-Type: text/html\r\nX-Other: 1\r\n", body)}, true},
		// The same payload chunked is the same payload.
		{Exchange{TargetURI: "http://c.test/", Date: d2, Request: request("/"), Response: response("200 OK", "Transfer-Encoding: chunked\r\n", fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body))}, true},
		// Non-2xx responses are never revisits.
		{Exchange{TargetURI: "http://d.test/", Date: d2, Request: request("/"), Response: response("404 Not Found", "", "gone")}, false},
		{Exchange{TargetURI: "http://e.test/", Date: d2, Request: request("/"), Response: response("404 Not Found", "", "gone")}, false},
		// Empty payloads are never revisits.
		{Exchange{TargetURI: "http://f.test/", Date: d2, Request: request("/"), Response: response("200 OK", "", "")}, false},
		{Exchange{TargetURI: "http://g.test/", Date: d2, Request: request("/"), Response: response("200 OK", "", "")}, false},
		{Exchange{TargetURI: "http://h.test/", Date: d2, Request: request("/"), Response: response("200 OK", "Transfer-Encoding: chunked\r\n", "0\r\n\r\n")}, false},
	}
	for i, s := range steps {
		res, err := w.Write(&s.ex)
		if err != nil {
			t.Fatal(err)
		}
		if res.Revisit != s.revisit {
			t.Errorf("step %d (%s): Revisit = %v; want %v", i, s.ex.TargetURI, res.Revisit, s.revisit)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Revisits != 2 {
		t.Errorf("Stats.Revisits = %d; want 2", st.Revisits)
	}
	path := warcFiles(t, opts.Dir)[0]
	recs := readWARC(t, path)
	orig := recs[2]
	for _, i := range []int{1, 2} {
		rv := recs[2+2*i]
		if rv.typ != gowarc.Revisit {
			t.Fatalf("record for step %d is %v; want revisit", i, rv.typ)
		}
		if len(rv.validation) != 0 {
			t.Errorf("revisit validation: %v", rv.validation)
		}
		h := rv.header
		checks := map[string]string{
			gowarc.WarcProfile:           gowarc.ProfileIdenticalPayloadDigestV1_1,
			gowarc.WarcPayloadDigest:     sha1B32(body),
			gowarc.WarcRefersToTargetURI: "http://a.test/",
			gowarc.WarcRefersToDate:      "2024-01-01T00:00:00.000000Z",
			gowarc.WarcRefersTo:          orig.header.Get(gowarc.WarcRecordID),
			gowarc.WarcTargetURI:         steps[i].ex.TargetURI,
		}
		for k, want := range checks {
			if got := h.Get(k); got != want {
				t.Errorf("step %d: %s = %q; want %q", i, k, got, want)
			}
		}
		wantBlock := parseResponse(steps[i].ex.Response).header
		if !bytes.Equal(rv.block, wantBlock) {
			t.Errorf("step %d: revisit block = %q; want the HTTP header only %q", i, rv.block, wantBlock)
		}
	}
	if _, err := CheckFile(path); err != nil {
		t.Fatal(err)
	}
}

func TestRotation(t *testing.T) {
	opts := testOptions(t)
	opts.MaxFileBytes = 8 << 10
	opts.Prefix = "rot"
	w, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	perFile := map[string]int{}
	for i := range n {
		body := fmt.Sprintf("<html>page %d %x</html>", i, sha1.Sum([]byte{byte(i), byte(i >> 8)}))
		res, err := w.Write(&Exchange{TargetURI: fmt.Sprintf("http://example.test/%d", i), Request: request("/"),
			Response: response("200 OK", "", body)})
		if err != nil {
			t.Fatal(err)
		}
		perFile[res.File]++
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := warcFiles(t, opts.Dir)
	if len(files) < 3 || int64(len(files)) != w.Stats().Files || len(files) != len(perFile) {
		t.Fatalf("%d files (stats %d, results name %d); want several", len(files), w.Stats().Files, len(perFile))
	}
	total := 0
	for i, f := range files {
		if strings.HasSuffix(f, ".open") {
			t.Errorf("%s not renamed", f)
		}
		if want := fmt.Sprintf("-%05d.warc.gz", i); !strings.HasSuffix(f, want) {
			t.Errorf("file %d is %s; want serial suffix %s", i, f, want)
		}
		recs := readWARC(t, f)
		if recs[0].typ != gowarc.Warcinfo {
			t.Errorf("%s starts with %v", f, recs[0].typ)
		}
		if len(recs)%2 != 1 {
			t.Errorf("%s: %d records; a request must share its file with its response", f, len(recs))
		}
		if got := (len(recs) - 1) / 2; got != perFile[filepath.Base(f)] {
			t.Errorf("%s: %d exchanges; results say %d", f, got, perFile[filepath.Base(f)])
		}
		total += (len(recs) - 1) / 2
		if size := fileSize(t, f); i < len(files)-1 && (size < opts.MaxFileBytes || size > opts.MaxFileBytes+4<<10) {
			t.Errorf("%s: %d bytes; want about %d", f, size, opts.MaxFileBytes)
		}
		if _, err := CheckFile(f); err != nil {
			t.Error(err)
		}
	}
	if total != n {
		t.Errorf("%d exchanges in files; want %d", total, n)
	}
}

func TestConcurrentWritersOffsets(t *testing.T) {
	opts := testOptions(t)
	opts.Compressors = 3
	opts.QueueLength = 4
	opts.MaxFileBytes = 256 << 10
	w, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 40
	type got struct {
		uri string
		res Result
	}
	results := make(chan got, writers*each)
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				uri := fmt.Sprintf("http://w%d.example.test/%d", g, i)
				body := strings.Repeat(uri+" ", 20+i)
				res, err := w.Write(&Exchange{TargetURI: uri, IP: "127.0.0.1", Request: request(uri),
					Response: response("200 OK", "Content-Type: text/plain\r\n", body)})
				if err != nil {
					t.Error(err)
					return
				}
				results <- got{uri, res}
			}
		})
	}
	wg.Wait()
	close(results)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	count := 0
	for g := range results {
		count++
		path := filepath.Join(opts.Dir, g.res.File)
		r, err := gowarc.NewWarcFileReader(path, g.res.Offset)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := r.Next()
		if err != nil {
			t.Fatalf("%s at %s:%d: %v", g.uri, g.res.File, g.res.Offset, err)
		}
		if rec.Offset != g.res.Offset || rec.Size != g.res.Length {
			t.Errorf("%s: record at %d size %d; Result says %d size %d", g.uri, rec.Offset, rec.Size, g.res.Offset, g.res.Length)
		}
		if typ, uri := rec.WarcRecord.Type(), rec.WarcRecord.WarcHeader().Get(gowarc.WarcTargetURI); typ != gowarc.Response || uri != g.uri {
			t.Errorf("at %s:%d found %v %s; want response %s", g.res.File, g.res.Offset, typ, uri, g.uri)
		}
		rec.Close()
		r.Close()
		key := g.res.File + fmt.Sprint(g.res.Offset)
		if seen[key] {
			t.Errorf("two results at %s", key)
		}
		seen[key] = true
	}
	if count != writers*each {
		t.Fatalf("%d results; want %d", count, writers*each)
	}
	// Per writer goroutine, records appear in submission order.
	last := map[int]int{}
	for _, f := range warcFiles(t, opts.Dir) {
		for _, rec := range readWARC(t, f) {
			var g, i int
			if rec.typ != gowarc.Response {
				continue
			}
			if _, err := fmt.Sscanf(rec.header.Get(gowarc.WarcTargetURI), "http://w%d.example.test/%d", &g, &i); err != nil {
				t.Fatal(err)
			}
			if prev, ok := last[g]; ok && prev >= i {
				t.Errorf("writer %d: exchange %d stored after %d", g, i, prev)
			}
			last[g] = i
		}
	}
}

// devFull stands in for a file on a full disk.
func devFull(string) (fileHandle, error) {
	return os.OpenFile("/dev/full", os.O_WRONLY, 0)
}

func TestWriteErrorIsReturned(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	opts := testOptions(t)
	w, err := open(opts, devFull)
	if err != nil {
		t.Fatal(err)
	}
	ex := &Exchange{TargetURI: "http://example.test/", Request: request("/"), Response: response("200 OK", "", "x")}
	_, err = w.Write(ex)
	if err == nil || !errors.Is(err, syscall.ENOSPC) || !regexp.MustCompile(`^store: write petrel-\d{14}-00000\.warc\.gz: `).MatchString(err.Error()) {
		t.Fatalf("Write on a full disk = %v; want ENOSPC with context", err)
	}
	if _, err2 := w.Write(ex); !errors.Is(err2, syscall.ENOSPC) {
		t.Errorf("second Write = %v; want the sticky error", err2)
	}
	if cerr := w.Close(); !errors.Is(cerr, syscall.ENOSPC) {
		t.Errorf("Close = %v; want the write error", cerr)
	}
}

func TestWriteErrorConcurrent(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	w, err := open(testOptions(t), devFull)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 20 {
				uri := fmt.Sprintf("http://example.test/%d/%d", g, i)
				if _, err := w.Write(&Exchange{TargetURI: uri, Request: request(uri), Response: response("200 OK", "", uri)}); err == nil {
					t.Errorf("Write %s succeeded on a full disk", uri)
				}
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err == nil {
		t.Error("Close succeeded on a full disk")
	}
}

func TestCreateErrorIsReturned(t *testing.T) {
	w, err := open(testOptions(t), func(string) (fileHandle, error) { return nil, os.ErrPermission })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(&Exchange{TargetURI: "http://example.test/", Response: response("200 OK", "", "x")}); !errors.Is(err, os.ErrPermission) {
		t.Errorf("Write = %v; want the create error", err)
	}
	if err := w.Close(); !errors.Is(err, os.ErrPermission) {
		t.Errorf("Close = %v; want the create error", err)
	}
}

func TestOpenOptions(t *testing.T) {
	if _, err := Open(Options{}); err == nil {
		t.Error("Open with no Dir succeeded")
	}
	opts := testOptions(t)
	opts.GzipLevel = 42
	if _, err := Open(opts); err == nil {
		t.Error("Open with gzip level 42 succeeded")
	}
	// Close with nothing written leaves no file behind.
	opts = testOptions(t)
	w, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if files := warcFiles(t, opts.Dir); len(files) != 0 {
		t.Errorf("files after an empty run: %v", files)
	}
}

func TestExistingFileNotOverwritten(t *testing.T) {
	opts := testOptions(t)
	// Two writers in the same second on the same directory must not clash.
	var names []string
	for range 2 {
		w, err := Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		res, err := w.Write(&Exchange{TargetURI: "http://example.test/", Request: request("/"), Response: response("200 OK", "", "x")})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		names = append(names, res.File)
	}
	if names[0] == names[1] || len(warcFiles(t, opts.Dir)) != 2 {
		t.Errorf("names %v, files %v", names, warcFiles(t, opts.Dir))
	}
}

func TestWriteRejectsBadFields(t *testing.T) {
	w, err := Open(testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, ex := range []*Exchange{
		nil,
		{TargetURI: ""},
		{TargetURI: "http://example.test/\r\nWARC-Type: resource"},
		{TargetURI: "http://example.test/", IP: "1.2.3.4\n"},
		{TargetURI: "http://example.test/", Truncated: "length\r\n"},
	} {
		if _, err := w.Write(ex); err == nil {
			t.Errorf("Write(%+v) succeeded", ex)
		}
	}
	if st := w.Stats(); st.Records != 0 {
		t.Errorf("records written: %d", st.Records)
	}
}

// TestStoreBelow checks that records under Options.StoreBelow go in a
// stored deflate block and larger ones are compressed, that a negative
// StoreBelow compresses everything, and that both read back intact.
func TestStoreBelow(t *testing.T) {
	body := strings.Repeat("a compressible page of text ", 800) // ~22 KiB
	cases := []struct {
		name       string
		storeBelow int
		reqStored  bool
	}{
		{"default", 0, true},
		{"never", -1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := testOptions(t)
			opts.StoreBelow = c.storeBelow
			w, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(&Exchange{TargetURI: "http://example.test/", Request: request("/"),
				Response: response("200 OK", "Content-Type: text/html\r\n", body)}); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			path := warcFiles(t, opts.Dir)[0]
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			recs := readWARC(t, path) // fails the test on any finding
			seen := 0
			for _, r := range recs {
				// A gzip member written here has a 10-byte header; bits 1-2
				// of the first deflate byte are the block type (0 stored).
				btype := raw[r.offset+10] >> 1 & 3
				switch r.typ {
				case gowarc.Request:
					seen++
					if stored := btype == 0; stored != c.reqStored {
						t.Errorf("request record: stored %v, want %v", stored, c.reqStored)
					}
				case gowarc.Response:
					seen++
					if btype == 0 {
						t.Error("response record of 22 KiB stored, want compressed")
					}
					if !bytes.HasSuffix(r.block, []byte(body)) {
						t.Error("response block does not read back")
					}
				}
			}
			if seen != 2 {
				t.Fatalf("%d request/response records, want 2", seen)
			}
		})
	}
}

// syncFile is an os.File whose Sync is counted, optionally slowed, and
// optionally failed the first time, to watch the background syncs.
type syncFile struct {
	*os.File
	c *syncCounts
}

type syncCounts struct {
	syncs     atomic.Int32 // Sync calls
	running   atomic.Int32 // Sync calls running now
	maxRun    atomic.Int32 // most Sync calls seen running at once
	slow      time.Duration
	failFirst error // returned by the first Sync
}

func (f syncFile) Sync() error {
	c := f.c
	n := c.running.Add(1)
	defer c.running.Add(-1)
	for m := c.maxRun.Load(); n > m && !c.maxRun.CompareAndSwap(m, n); m = c.maxRun.Load() {
	}
	time.Sleep(c.slow)
	if c.syncs.Add(1) == 1 && c.failFirst != nil {
		return c.failFirst
	}
	return f.File.Sync()
}

// waitIdle waits until no Sync runs (bounded: 5 s).
func (c *syncCounts) waitIdle(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); c.running.Load() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a Sync still runs after 5 s")
		}
	}
}

func TestBackgroundSync(t *testing.T) {
	errSync := errors.New("sync failed")
	// Incompressible bodies, so the file grows by about 4 KiB an exchange.
	rng := rand.New(rand.NewPCG(1, 2))
	body := make([]byte, 4<<10)
	for i := range body {
		body[i] = byte(rng.Uint32())
	}
	const exchanges = 64
	for _, tc := range []struct {
		name      string
		syncEvery int64
		c         *syncCounts
		waitIdle  bool // let each background sync end before the next Write
	}{
		{"every 16 KiB", 16 << 10, &syncCounts{}, true},
		{"never in the background", -1, &syncCounts{}, true},
		{"one at a time", 16 << 10, &syncCounts{slow: 2 * time.Millisecond}, false},
		{"failing", 16 << 10, &syncCounts{failFirst: errSync}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions(t)
			opts.SyncEvery = tc.syncEvery
			opts.QueueLength = 1 // a flush after every exchange
			w, err := open(opts, func(path string) (fileHandle, error) {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
				if err != nil {
					return nil, err
				}
				return syncFile{File: f, c: tc.c}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			var writeErrs []error
			for i := range exchanges {
				uri := fmt.Sprintf("http://example.test/%d", i)
				resp := append([]byte("HTTP/1.1 200 OK\r\n\r\n"+uri), body...)
				_, err := w.Write(&Exchange{TargetURI: uri, Request: request(uri), Response: resp})
				writeErrs = append(writeErrs, err)
				if tc.waitIdle {
					tc.c.waitIdle(t)
				}
			}
			closeErr := w.Close()
			syncs := tc.c.syncs.Load()
			if m := tc.c.maxRun.Load(); m > 1 {
				t.Errorf("%d syncs ran at once; want at most 1", m)
			}
			open, _ := filepath.Glob(filepath.Join(opts.Dir, "*.warc.gz.open"))
			done, _ := filepath.Glob(filepath.Join(opts.Dir, "*.warc.gz"))
			if tc.c.failFirst != nil {
				// The first background sync fails: a Write after it gets
				// the error, every Write after that too, and Close.
				first := slices.IndexFunc(writeErrs, func(err error) bool { return err != nil })
				if first < 0 || !errors.Is(writeErrs[first], errSync) || !strings.HasPrefix(writeErrs[first].Error(), "store: sync ") {
					t.Fatalf("Write errors %v; want the sync error, wrapped as store: sync", writeErrs)
				}
				for i := first; i < len(writeErrs); i++ {
					if !errors.Is(writeErrs[i], errSync) {
						t.Errorf("Write %d after the failed sync = %v; want the sticky error", i, writeErrs[i])
					}
				}
				if !errors.Is(closeErr, errSync) {
					t.Errorf("Close = %v; want the sync error", closeErr)
				}
				if len(open) != 1 || len(done) != 0 {
					t.Errorf("files %v, %v; want the file left .open", open, done)
				}
				return
			}
			for i, err := range writeErrs {
				if err != nil {
					t.Fatalf("Write %d: %v", i, err)
				}
			}
			if closeErr != nil {
				t.Fatal(closeErr)
			}
			switch {
			case tc.syncEvery < 0 && syncs != 1:
				t.Errorf("%d Sync calls; want 1 (at Close)", syncs)
			case tc.syncEvery > 0 && tc.waitIdle && syncs < exchanges*4/16-2:
				t.Errorf("%d Sync calls; want one per 16 KiB written", syncs)
			case tc.syncEvery > 0 && syncs < 2:
				t.Errorf("%d Sync calls; want a background one and Close's", syncs)
			}
			if len(done) != 1 || len(open) != 0 {
				t.Fatalf("files %v, %v; want one closed file", done, open)
			}
			if recs := readWARC(t, done[0]); len(recs) != 1+2*exchanges {
				t.Errorf("%d records; want %d", len(recs), 1+2*exchanges)
			}
		})
	}
}

// TestTruncatedNeverRevisit: a capture cut short is stored in full with
// WARC-Truncated however often it is retried, never as a revisit, and its
// digest does not enter the filter, so the first whole capture is a
// response and only later ones are revisits, of it.
func TestTruncatedNeverRevisit(t *testing.T) {
	opts := testOptions(t)
	w, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	d := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	whole := strings.Repeat("<p>reset soon</p>\n", 100)
	cut := response("200 OK", "Content-Length: 1048576\r\n", whole[:900])
	full := response("200 OK", fmt.Sprintf("Content-Length: %d\r\n", len(whole)), whole)
	steps := []struct {
		ex      Exchange
		revisit bool
	}{
		{Exchange{TargetURI: "http://r.test/", Date: d, Request: request("/"), Response: cut, Truncated: "disconnect"}, false},
		{Exchange{TargetURI: "http://r.test/", Date: d.Add(time.Second), Request: request("/"), Response: cut, Truncated: "disconnect"}, false},
		{Exchange{TargetURI: "http://r.test/", Date: d.Add(2 * time.Second), Request: request("/"), Response: cut, Truncated: "time"}, false},
		{Exchange{TargetURI: "http://r.test/", Date: d.Add(3 * time.Second), Request: request("/"), Response: full}, false},
		{Exchange{TargetURI: "http://s.test/", Date: d.Add(4 * time.Second), Request: request("/"), Response: full}, true},
		// A capture cut where an earlier whole one ended is still cut.
		{Exchange{TargetURI: "http://t.test/", Date: d.Add(5 * time.Second), Request: request("/"), Response: full, Truncated: "length"}, false},
	}
	var exs []*Exchange
	var revisits []bool
	for i := range steps {
		exs, revisits = append(exs, &steps[i].ex), append(revisits, steps[i].revisit)
	}
	recs := writeSteps(t, w, opts.Dir, exs, revisits)
	for i, s := range steps {
		r := recs[2+2*i]
		if got := r.header.Get(gowarc.WarcTruncated); got != s.ex.Truncated {
			t.Errorf("step %d: WARC-Truncated %q; want %q", i, got, s.ex.Truncated)
		}
		if s.ex.Truncated != "" && r.typ != gowarc.Response {
			t.Errorf("step %d: a truncated capture stored as %v", i, r.typ)
		}
	}
	rv := recs[2+2*4].header
	if rv.Get(gowarc.WarcRefersToTargetURI) != "http://r.test/" || rv.Get(gowarc.WarcRefersToDate) != "2024-01-01T00:00:03.000000Z" ||
		rv.Get(gowarc.WarcRefersTo) != recs[2+2*3].header.Get(gowarc.WarcRecordID) {
		t.Errorf("revisit refers to %s %s %s; want the whole capture of http://r.test/ at 00:00:03", rv.Get(gowarc.WarcRefersTo),
			rv.Get(gowarc.WarcRefersToTargetURI), rv.Get(gowarc.WarcRefersToDate))
	}
}

// TestRevisitNeedsItsOriginal: once the first capture of a payload is
// forgotten (beyond RevisitRefs), a duplicate is stored in full rather than
// as a revisit without WARC-Refers-To-Target-URI and -Date, and becomes
// the capture later duplicates refer to.
func TestRevisitNeedsItsOriginal(t *testing.T) {
	opts := testOptions(t)
	opts.RevisitRefs = 1
	w, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	page := func(u, body string) *Exchange {
		return &Exchange{TargetURI: u, Request: request("/"), Response: response("200 OK", "", body)}
	}
	recs := writeSteps(t, w, opts.Dir, []*Exchange{
		page("http://a.test/", "A"),
		page("http://b.test/", "B"), // pushes A's first capture out
		page("http://c.test/", "A"), // A again, original forgotten: in full
		page("http://d.test/", "A"), // refers to c.test
	}, []bool{false, false, false, true})
	if got := recs[8].header.Get(gowarc.WarcRefersToTargetURI); got != "http://c.test/" {
		t.Errorf("revisit refers to %q; want http://c.test/", got)
	}
}

// writeSteps writes exs, checks which were revisits, closes w and reads
// its one file back.
func writeSteps(t *testing.T, w *Writer, dir string, exs []*Exchange, revisit []bool) []readRecord {
	t.Helper()
	for i, ex := range exs {
		res, err := w.Write(ex)
		if err != nil {
			t.Fatal(err)
		}
		if res.Revisit != revisit[i] {
			t.Errorf("step %d (%s): Revisit = %v; want %v", i, ex.TargetURI, res.Revisit, revisit[i])
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return readWARC(t, warcFiles(t, dir)[0])
}

// TestDigestsSurviveAStop: the filter and the remembered first captures
// saved at a stop make a duplicate after the resume a revisit naming the
// capture from before the stop; a save holding only the filter loads, and
// its duplicates are stored in full.
func TestDigestsSurviveAStop(t *testing.T) {
	opts := testOptions(t)
	w, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	first := &Exchange{TargetURI: "http://a.test/", Date: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		Request: request("/"), Response: response("200 OK", "", "same body")}
	if _, err := w.Write(first); err != nil {
		t.Fatal(err)
	}
	var saved bytes.Buffer
	if err := w.SaveDigests(&saved); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var filterOnly bytes.Buffer
	w.bloom.WriteTo(&filterOnly)

	for _, c := range []struct {
		name    string
		data    []byte
		revisit bool
	}{{"filter and captures", saved.Bytes(), true}, {"filter only", filterOnly.Bytes(), false}} {
		o := testOptions(t)
		w2, err := Open(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := w2.LoadDigests(bytes.NewReader(c.data)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		recs := writeSteps(t, w2, o.Dir, []*Exchange{{TargetURI: "http://b.test/", Request: request("/"),
			Response: response("200 OK", "", "same body")}}, []bool{c.revisit})
		if c.revisit && (recs[2].header.Get(gowarc.WarcRefersToTargetURI) != "http://a.test/" ||
			recs[2].header.Get(gowarc.WarcRefersToDate) != "2024-01-01T00:00:00.000000Z") {
			t.Errorf("%s: revisit refers to %q %q", c.name, recs[2].header.Get(gowarc.WarcRefersToTargetURI), recs[2].header.Get(gowarc.WarcRefersToDate))
		}
	}
	if err := (&Writer{opts: Options{RevisitRefs: 4}}).LoadDigests(bytes.NewReader(append(filterOnly.Bytes(), "junk"...))); err == nil {
		t.Error("LoadDigests accepted junk after the filter")
	}
}
