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
	if err := ListRecords(path, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 7 {
		t.Fatalf("%d lines; want 7:\n%s", len(lines), out.String())
	}
	wantPrefix := []string{
		"warcinfo - ",
		"request http://www.example.test/b?z=1&a=2 2024-01-02T03:04:05.000000Z ",
		"response http://www.example.test/b?z=1&a=2 2024-01-02T03:04:05.000000Z ",
		"request http://example.test/a 2024-01-02T03:04:06.000000Z ",
		"response http://example.test/a 2024-01-02T03:04:06.000000Z ",
		"request http://example.test/c ",
		"revisit http://example.test/c 2024-01-02T03:04:07.000000Z ",
	}
	for i, p := range wantPrefix {
		if !strings.HasPrefix(lines[i], p) {
			t.Errorf("line %d = %q; want prefix %q", i, lines[i], p)
		}
	}
	if f := strings.Fields(lines[2]); f[4] != res[0].PayloadDigest || f[5] != itoa(res[0].Offset) {
		t.Errorf("response line %q; want digest %s offset %d", lines[2], res[0].PayloadDigest, res[0].Offset)
	}
	if err := ListRecords(filepath.Join(t.TempDir(), "missing.warc.gz"), &out); err == nil {
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
	if err := WriteCDXJ(path, &out); err != nil {
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
