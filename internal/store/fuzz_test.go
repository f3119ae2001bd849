package store

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// validWARC returns the bytes of a small WARC file written by Writer: a
// warcinfo record, then a request, a response and a revisit.
func validWARC(t testing.TB) []byte {
	t.Helper()
	dir := t.TempDir()
	w, err := Open(Options{Dir: dir, Software: "Petrel/fuzz"})
	if err != nil {
		t.Fatal(err)
	}
	body := "<html><body><a href=/x>x</a></body></html>"
	resp := "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: " + itoa(int64(len(body))) + "\r\n\r\n" + body
	for _, u := range []string{"http://a.test/", "http://a.test/copy"} {
		_, err := w.Write(&Exchange{TargetURI: u, IP: "127.0.0.1", Date: time.Unix(1700000000, 0),
			Request:  []byte("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n"),
			Response: []byte(resp)})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if len(files) != 1 {
		t.Fatalf("%d WARC files", len(files))
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// gzipped compresses b as one gzip member.
func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// FuzzCheckFile feeds CheckFile and ListRecords (the WARC reading used by
// tests and by "petrel warc") with random and mutated WARC files: they must
// return, with an error or not, and never panic; a file CheckFile accepts
// must be listed without error. Seeds: a file written by Writer, its
// truncations, and hand-made records (testdata/fuzz/FuzzCheckFile).
func FuzzCheckFile(f *testing.F) {
	valid := validWARC(f)
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add(gzipped([]byte("WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 3\r\n\r\nabc\r\n\r\n")))
	f.Add(gzipped([]byte("not a warc")))
	f.Add([]byte{})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		path := filepath.Join(dir, "fuzz.warc.gz")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, checkErr := CheckFile(path)
		lsErr := ListRecords([]string{path}, io.Discard, false)
		if checkErr == nil && lsErr != nil {
			t.Errorf("CheckFile accepted the file, ListRecords failed: %v", lsErr)
		}
	})
}

// TestCheckFileValid pins the property the fuzz target starts from: a file
// written by Writer passes CheckFile.
func TestCheckFileValid(t *testing.T) {
	b := validWARC(t)
	path := filepath.Join(t.TempDir(), "v.warc.gz")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := CheckFile(path)
	if err != nil || n < 4 {
		t.Errorf("CheckFile = %d records, %v; want at least 4 and nil", n, err)
	}
}
