package store

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	gowarc "github.com/nlnwa/gowarc/v3"
)

// TestNotModified stores a 200, then a 304 that confirms it, and reads
// the 304 back with gowarc: a revisit record with the server-not-modified
// profile referring to the 200's record, URI and date, its block the HTTP
// header, no payload digest, valid for gowarc and CheckFile. A 304 with no
// capture to refer to stays a response record.
func TestNotModified(t *testing.T) {
	opts := testOptions(t)
	opts.Index = true
	w, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	d1 := time.Date(2026, 12, 7, 6, 0, 0, 123000, time.UTC)
	first, err := w.Write(&Exchange{TargetURI: "http://a.test/p", Date: d1, Request: request("/p"),
		Response: response("200 OK", "ETag: \"v1\"\r\nContent-Length: 5\r\n", "hello")})
	if err != nil || first.RecordID == "" || first.NotModified {
		t.Fatalf("first capture: %+v, %v", first, err)
	}
	nm := response("304 Not Modified", "ETag: \"v1\"\r\n", "")
	res, err := w.Write(&Exchange{TargetURI: "http://a.test/p", Date: d1.Add(time.Hour), Request: request("/p"), Response: nm,
		NotModified: &Original{URI: "http://a.test/p", Date: d1, RecordID: first.RecordID}})
	if err != nil || !res.Revisit || !res.NotModified {
		t.Fatalf("304: %+v, %v", res, err)
	}
	plain, err := w.Write(&Exchange{TargetURI: "http://b.test/", Date: d1, Request: request("/"), Response: nm})
	if err != nil || plain.Revisit {
		t.Fatalf("304 without an original: %+v, %v", plain, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Revisits != 1 {
		t.Errorf("Stats.Revisits = %d, want 1", st.Revisits)
	}
	path := warcFiles(t, opts.Dir)[0]
	recs := readWARC(t, path)
	rv := recs[4]
	if rv.typ != gowarc.Revisit || len(rv.validation) != 0 {
		t.Fatalf("304 read back as %v (validation %v)", rv.typ, rv.validation)
	}
	for k, want := range map[string]string{
		gowarc.WarcProfile:           "http://netpreserve.org/warc/1.1/revisit/server-not-modified",
		gowarc.WarcRefersTo:          first.RecordID,
		gowarc.WarcRefersToTargetURI: "http://a.test/p",
		gowarc.WarcRefersToDate:      "2026-12-07T06:00:00.000123Z",
		gowarc.WarcTargetURI:         "http://a.test/p",
		gowarc.WarcRecordID:          res.RecordID,
		gowarc.WarcPayloadDigest:     "",
	} {
		if got := rv.header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if !bytes.Equal(rv.block, parseResponse(nm).header) {
		t.Errorf("block %q, want the HTTP header", rv.block)
	}
	if recs[6].typ != gowarc.Response {
		t.Errorf("304 without an original stored as %v, want response", recs[6].typ)
	}
	if _, err := CheckFile(path); err != nil {
		t.Fatal(err)
	}
	// Its index line gives the status of the capture it confirms (200),
	// no digest, alike from the writer and read back from the file.
	live, err := os.ReadFile(fileIndexName(path))
	if err != nil {
		t.Fatal(err)
	}
	if want := cdxjOf(t, path); string(live) != want {
		t.Errorf("the writer's index\n%s\ndiffers from the file's\n%s", live, want)
	}
	found := false
	for _, l := range strings.Split(string(live), "\n") {
		if strings.Contains(l, `"warc/revisit"`) {
			found = true
			if !strings.Contains(l, `"status":"200"`) || strings.Contains(l, `"digest"`) {
				t.Errorf("the 304's index line %s: want status 200 and no digest", l)
			}
		}
	}
	if !found {
		t.Errorf("no revisit line in the index:\n%s", live)
	}
}
