package dataset

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gowarc "github.com/nlnwa/gowarc/v3"

	"github.com/petrel-crawler/petrel/internal/store"
)

const testPage = `<!doctype html><html><head><meta charset="utf-8"><meta><title>A  page</title>
<meta name="description" content="about it"><link rel="stylesheet" href="/s.css">
<script src="/app.js"></script><script>var x = "no text";</script></head>
<body><h1>Heading</h1><p>First   paragraph with <a href="/next" title="go">the next
page</a>.</p><div>Second block</div><img src="/i.png" alt="pic"></body></html>`

// writeWARC writes a WARC file of an HTML page, a redirect and a
// duplicate (a revisit record) with Petrel's store, and returns its path.
func writeWARC(t *testing.T, dir string) string {
	t.Helper()
	return writeExchanges(t, dir, []store.Exchange{
		{TargetURI: "http://www.example.co.uk/a?q=1", Response: htmlResponse("200 OK", "", testPage)},
		{TargetURI: "http://www.example.co.uk/old", Response: htmlResponse("301 Moved", "Location: /a?q=1\r\n", "")},
		{TargetURI: "http://blog.example.co.uk:8080/copy", Response: htmlResponse("200 OK", "", testPage)},
	})
}

// htmlResponse is an HTTP response with an HTML body, extra header lines
// and a repeated Set-Cookie.
func htmlResponse(status, extra, body string) []byte {
	return []byte(fmt.Sprintf("HTTP/1.1 %s\r\nContent-Type: text/html; charset=utf-8\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n%sContent-Length: %d\r\n\r\n%s", status, extra, len(body), body))
}

// writeExchanges writes a WARC file of exs with Petrel's store and returns
// its path.
func writeExchanges(t testing.TB, dir string, exs []store.Exchange) string {
	t.Helper()
	w, err := store.Open(store.Options{Dir: dir, Software: "test"})
	if err != nil {
		t.Fatal(err)
	}
	date := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	for _, ex := range exs {
		ex.IP, ex.Date = "127.0.0.1", date
		ex.Request = []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		if _, err := w.Write(&ex); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := store.WARCFiles([]string{dir})
	if err != nil || len(files) != 1 {
		t.Fatalf("WARC files %v, %v", files, err)
	}
	return files[0]
}

// readWARC returns the records of a WARC file as gowarc reads them: their
// header fields and blocks.
func readWARC(t *testing.T, path string) (headers []*gowarc.WarcFields, blocks [][]byte) {
	t.Helper()
	r, err := gowarc.NewWarcFileReader(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(rec.Validation) > 0 {
			t.Errorf("%s: offset %d: %v", path, rec.Offset, rec.Validation)
		}
		rd, _ := rec.WarcRecord.Block().RawBytes()
		b, _ := io.ReadAll(rd)
		headers, blocks = append(headers, rec.WarcRecord.WarcHeader()), append(blocks, b)
		rec.Close()
	}
}

func TestConvertWATWETRows(t *testing.T) {
	dir := t.TempDir()
	warc := writeWARC(t, dir)
	res, err := Convert(warc, Options{WAT: true, WET: true, Rows: true})
	if err != nil {
		t.Fatal(err)
	}
	// warcinfo + 3 requests + 3 responses (the third a revisit).
	if res.Records != 7 || res.Pages != 1 || res.Texts != 1 || len(res.Rows) != 3 {
		t.Fatalf("result %+v", res)
	}

	for p, n := range map[string]int64{WATName(warc): res.WATBytes, WETName(warc): res.WETBytes} {
		if fi, err := os.Stat(p); err != nil || fi.Size() != n {
			t.Errorf("%s: %d bytes said, file %v %v", p, n, fi, err)
		}
	}
	wh, wb := readWARC(t, WATName(warc))
	if len(wh) != 8 || wh[0].Get("WARC-Type") != "warcinfo" {
		t.Fatalf("WAT: %d records", len(wh))
	}
	var page map[string]any
	for i, h := range wh[1:] {
		if h.Get("WARC-Type") != "metadata" || h.Get("Content-Type") != "application/json" || h.Get("WARC-Refers-To") == "" {
			t.Errorf("WAT record %d: %v", i+1, h)
		}
		var m map[string]any
		if err := json.Unmarshal(wb[i+1], &m); err != nil {
			t.Fatalf("WAT record %d: %v", i+1, err)
		}
		if h.Get("WARC-Target-URI") == "http://www.example.co.uk/a?q=1" && strings.Contains(string(wb[i+1]), "HTTP-Response-Metadata") {
			page = m
		}
	}
	if page == nil {
		t.Fatal("no WAT record of the page's response")
	}
	hrm := dig(t, page, "Envelope", "Payload-Metadata", "HTTP-Response-Metadata").(map[string]any)
	if s := dig(t, hrm, "Response-Message", "Status"); s != "200" {
		t.Errorf("status %v", s)
	}
	if c := dig(t, hrm, "Headers", "Set-Cookie"); fmt.Sprint(c) != "[a=1 b=2]" {
		t.Errorf("repeated header %v, want a list", c)
	}
	html := hrm["HTML-Metadata"].(map[string]any)
	if s := dig(t, html, "Head", "Title"); s != "A page" {
		t.Errorf("title %q", s)
	}
	links := fmt.Sprint(html["Links"])
	for _, want := range []string{"path:A@/href", "url:/next", "text:the next page", "title:go", "path:IMG@/src", "alt:pic"} {
		if !strings.Contains(links, want) {
			t.Errorf("Links %s lack %s", links, want)
		}
	}
	if m := fmt.Sprint(dig(t, html, "Head", "Metas")); m != "[map[charset:utf-8] map[content:about it name:description]]" {
		t.Errorf("Metas %s", m)
	}
	if s := fmt.Sprint(dig(t, html, "Head", "Scripts")); !strings.Contains(s, "url:/app.js") {
		t.Errorf("Scripts %s", s)
	}
	if s, _ := html["SimHash"].(string); len(s) != 16 || s != fmt.Sprintf("%016x", uint64(*res.Rows[0].ContentSimHash)) && s != fmt.Sprintf("%016x", uint64(*res.Rows[1].ContentSimHash)) {
		t.Errorf("SimHash %q does not match the index's", s)
	}

	th, tb := readWARC(t, WETName(warc))
	if len(th) != 2 || th[1].Get("WARC-Type") != "conversion" || th[1].Get("Content-Type") != "text/plain" || th[1].Get("WARC-Refers-To") == "" {
		t.Fatalf("WET records %v", th)
	}
	wantText := "A page\n\nHeading\n\nFirst paragraph with the next page.\n\nSecond block\n"
	if string(tb[1]) != wantText {
		t.Errorf("WET text %q, want %q", tb[1], wantText)
	}

	out := filepath.Join(dir, "index.parquet")
	rep, err := WriteIndex([]string{warc}, filepath.Base, out)
	if err != nil || rep.Rows != 3 {
		t.Fatalf("WriteIndex %+v, %v", rep, err)
	}
	rows, err := ReadRows(out)
	if err != nil {
		t.Fatal(err)
	}
	byURL := map[string]Row{}
	for _, r := range rows {
		byURL[r.URL] = r
	}
	a := byURL["http://www.example.co.uk/a?q=1"]
	if a.URLSurtKey != "uk,co,example)/a?q=1" || a.URLHostRegisteredDomain != "example.co.uk" || a.URLHostRegistrySuffix != "co.uk" ||
		a.URLHostTLD != "uk" || a.URLPath != "/a" || a.URLQuery != "q=1" || a.FetchStatus != 200 || a.ContentMimeType != "text/html" ||
		a.ContentMimeDetected != "text/html" || a.ContentCharset != "UTF-8" || a.ContentSimHash == nil || a.Subset != "warc" || a.URLPort != nil {
		t.Errorf("page row %+v", a)
	}
	if old := byURL["http://www.example.co.uk/old"]; old.FetchStatus != 301 || old.FetchRedirect != "http://www.example.co.uk/a?q=1" || old.Subset != "crawldiagnostics" {
		t.Errorf("redirect row %+v", old)
	}
	if cp := byURL["http://blog.example.co.uk:8080/copy"]; cp.URLPort == nil || *cp.URLPort != 8080 || cp.ContentDigest != a.ContentDigest {
		t.Errorf("revisit row %+v", cp)
	}
	// A row locates its record: the record at its offset and length is
	// that URL's response.
	f, _ := os.Open(warc)
	defer f.Close()
	member := make([]byte, a.WARCRecordLength)
	if _, err := f.ReadAt(member, int64(a.WARCRecordOffset)); err != nil {
		t.Fatal(err)
	}
	rec, err := store.ReadRecordAt(bytes.NewReader(member), 0)
	if err != nil || !bytes.Contains(rec, []byte("WARC-Target-URI: "+a.URL+"\r\n")) || !bytes.Contains(rec, []byte("WARC-Type: response")) {
		t.Errorf("record at %d+%d: %.200q, %v", a.WARCRecordOffset, a.WARCRecordLength, rec, err)
	}
}

// dig follows keys through nested JSON objects.
func dig(t *testing.T, v any, keys ...string) any {
	t.Helper()
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("no object at %s", k)
		}
		v = m[k]
	}
	return v
}

// TestConvertForeignWARC converts a WARC file no Petrel wrote: WARC/1.0,
// uncompressed, a chunked gzip response without a payload digest.
func TestConvertForeignWARC(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("<html><title>Foreign</title><p>Some text &amp; more</p><a href=x>link</a></html>"))
	zw.Close()
	body := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", gz.Len(), gz.Bytes())
	http := "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n" + body
	rec := func(fields, block string) string {
		return fmt.Sprintf("WARC/1.0\r\n%sContent-Length: %d\r\n\r\n%s\r\n\r\n", fields, len(block), block)
	}
	warc := rec("WARC-Type: warcinfo\r\nWARC-Date: 2020-01-02T03:04:05Z\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000001>\r\nContent-Type: application/warc-fields\r\n",
		"software: other/1.0\r\nisPartOf: theirs\r\n") +
		rec("WARC-Type: response\r\nWARC-Target-URI: https://other.example.org/p\r\nWARC-Date: 2020-01-02T03:04:06Z\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000002>\r\n"+
			"WARC-Concurrent-To: <urn:uuid:3>\r\nWARC-Concurrent-To: <urn:uuid:4>\r\nContent-Type: application/http; msgtype=response\r\n", http)
	p := filepath.Join(t.TempDir(), "other.warc")
	if err := os.WriteFile(p, []byte(warc), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Convert(p, Options{WAT: true, WET: true, Rows: true})
	if err != nil || res.Records != 2 || res.Pages != 1 || len(res.Rows) != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
	if r := res.Rows[0]; r.Crawl != "theirs" || r.FetchStatus != 200 || r.URLHostRegisteredDomain != "example.org" || r.WARCRecordOffset == 0 {
		t.Errorf("row %+v", r)
	}
	_, blocks := readWARC(t, WETName(p))
	if len(blocks) != 2 || string(blocks[1]) != "Foreign\n\nSome text & more\n" {
		t.Errorf("WET %q", blocks)
	}
	wh, wb := readWARC(t, WATName(p))
	if len(wh) != 3 || wh[2].Get("WARC-Refers-To") != "<urn:uuid:00000000-0000-4000-8000-000000000002>" {
		t.Fatalf("WAT %v", wh)
	}
	// A repeated WARC field is a list, as ia-web-commons accumulates it.
	if !bytes.Contains(wb[2], []byte(`"WARC-Concurrent-To":["<urn:uuid:3>","<urn:uuid:4>"]`)) {
		t.Errorf("WAT %s", wb[2])
	}
}
