package store

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gowarc "github.com/nlnwa/gowarc/v3"
)

// writeSample writes three exchanges (the third a revisit of the first) and
// returns the file and the results.
func writeSample(t *testing.T) (string, []Result) {
	t.Helper()
	opts := testOptions(t)
	w, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	d := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	exs := []Exchange{
		{TargetURI: "http://www.example.test/b?z=1&a=2", IP: "127.0.0.1", Date: d, Request: request("/b"),
			Response: response("200 OK", "Content-Type: text/html; charset=utf-8\r\n", "<p>hi</p>")},
		{TargetURI: "http://example.test/a", IP: "127.0.0.1", Date: d.Add(time.Second), Request: request("/a"),
			Response: response("404 Not Found", "Content-Type: text/plain\r\n", "no")},
		{TargetURI: "http://example.test/c", IP: "127.0.0.1", Date: d.Add(2 * time.Second), Request: request("/c"),
			Response: response("200 OK", "Content-Type: text/html\r\n", "<p>hi</p>")},
	}
	var res []Result
	for i := range exs {
		r, err := w.Write(&exs[i])
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, r)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(opts.Dir, res[0].File), res
}

func TestListRecords(t *testing.T) {
	path, res := writeSample(t)
	var out bytes.Buffer
	if err := ListRecords([]string{path}, &out, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 8 {
		t.Fatalf("%d lines; want a header and 7 records:\n%s", len(lines), out.String())
	}
	if lines[0] != lsHeader {
		t.Errorf("header %q; want %q", lines[0], lsHeader)
	}
	want := [][]string{ // type, status, date, URI
		{"warcinfo", "-", "", "-"},
		{"request", "-", "2024-01-02T03:04:05.000000Z", "http://www.example.test/b?z=1&a=2"},
		{"response", "200", "2024-01-02T03:04:05.000000Z", "http://www.example.test/b?z=1&a=2"},
		{"request", "-", "2024-01-02T03:04:06.000000Z", "http://example.test/a"},
		{"response", "404", "2024-01-02T03:04:06.000000Z", "http://example.test/a"},
		{"request", "-", "2024-01-02T03:04:07.000000Z", "http://example.test/c"},
		{"revisit", "200", "2024-01-02T03:04:07.000000Z", "http://example.test/c"},
	}
	for i, w := range want {
		f := strings.Fields(lines[i+1])
		if len(f) != 7 || f[1] != w[0] || f[2] != w[1] || (w[2] != "" && f[3] != w[2]) || f[6] != w[3] {
			t.Errorf("line %d = %q; want type %s status %s date %s URI %s", i+1, lines[i+1], w[0], w[1], w[2], w[3])
		}
	}
	if f := strings.Fields(lines[3]); f[5] != res[0].PayloadDigest || f[0] != itoa(res[0].Offset) {
		t.Errorf("response line %q; want digest %s offset %d", lines[3], res[0].PayloadDigest, res[0].Offset)
	}

	out.Reset()
	if err := ListRecords([]string{filepath.Dir(path)}, &out, true); err != nil {
		t.Fatal(err)
	}
	var infos []RecordInfo
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var ri RecordInfo
		if err := json.Unmarshal([]byte(l), &ri); err != nil {
			t.Fatalf("--json line %q: %v", l, err)
		}
		infos = append(infos, ri)
	}
	if len(infos) != 7 || infos[2] != (RecordInfo{File: res[0].File, Offset: res[0].Offset, Type: "response", Status: 200,
		Date: "2024-01-02T03:04:05.000000Z", URL: "http://www.example.test/b?z=1&a=2", ContentLength: infos[2].ContentLength,
		PayloadDigest: res[0].PayloadDigest}) || infos[4].Status != 404 || infos[6].Type != "revisit" {
		t.Errorf("--json records %+v", infos)
	}
	if !strings.Contains(out.String(), `"url":"http://www.example.test/b?z=1&a=2"`) {
		t.Errorf("--json escapes URLs: %s", out.String())
	}
	if err := ListRecords([]string{filepath.Join(t.TempDir(), "missing.warc.gz")}, &out, false); err == nil {
		t.Error("ListRecords on a missing file succeeded")
	}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestWriteCDXJ(t *testing.T) {
	path, res := writeSample(t)
	var out bytes.Buffer
	if err := WriteCDXJ([]string{path}, &out, IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines; want 3:\n%s", len(lines), out.String())
	}
	type entry struct {
		URL, Mime, Status, Digest, Length, Offset, Filename string
	}
	want := []struct {
		key, stamp string
		e          entry
	}{
		{"test,example)/a", "20240102030406", entry{"http://example.test/a", "text/plain", "404", strings.TrimPrefix(res[1].PayloadDigest, "sha1:"), itoa(res[1].Length), itoa(res[1].Offset), res[1].File}},
		{"test,example)/b?a=2&z=1", "20240102030405", entry{"http://www.example.test/b?z=1&a=2", "text/html", "200", strings.TrimPrefix(res[0].PayloadDigest, "sha1:"), itoa(res[0].Length), itoa(res[0].Offset), res[0].File}},
		{"test,example)/c", "20240102030407", entry{"http://example.test/c", "warc/revisit", "200", strings.TrimPrefix(res[2].PayloadDigest, "sha1:"), itoa(res[2].Length), itoa(res[2].Offset), res[2].File}},
	}
	for i, l := range lines {
		parts := strings.SplitN(l, " ", 3)
		var e entry
		if err := json.Unmarshal([]byte(parts[2]), &e); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if parts[0] != want[i].key || parts[1] != want[i].stamp || e != want[i].e {
			t.Errorf("line %d = %s %s %+v; want %s %s %+v", i, parts[0], parts[1], e, want[i].key, want[i].stamp, want[i].e)
		}
	}
	// The offset and length of an entry locate a whole record.
	r, err := gowarc.NewWarcFileReader(path, res[0].Offset)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec, err := r.Next()
	if err != nil || rec.Size != res[0].Length {
		t.Fatalf("record at %d: size %d, %v; want size %d", res[0].Offset, rec.Size, err, res[0].Length)
	}
	rec.Close()
}
