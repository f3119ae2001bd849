package store

import (
	"os"
	"testing"
	"time"
)

// TestEachFetchRecord: the response and revisit records of the WARC files
// modified since a time are read back with what the fetch found (status,
// validators, digest, record ID, date, size); a file last modified before
// is not read, a directory that does not exist holds nothing.
func TestEachFetchRecord(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	date := time.Date(2026, 12, 7, 10, 0, 0, 123456789, time.UTC)
	req := []byte("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")
	ok := []byte("HTTP/1.1 200 OK\r\netag:  \"v1\" \r\nLast-Modified: Mon, 07 Dec 2026 09:00:00 GMT\r\nContent-Length: 5\r\n\r\nhello")
	full, err := w.Write(&Exchange{TargetURI: "http://a.test/", Date: date, Request: req, Response: ok})
	if err != nil {
		t.Fatal(err)
	}
	dup, err := w.Write(&Exchange{TargetURI: "http://a.test/copy", Date: date.Add(time.Second), Request: req, Response: ok})
	if err != nil || !dup.Revisit {
		t.Fatalf("the copy: %+v, %v", dup, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var got []FetchRecord
	collect := func(r FetchRecord) error { got = append(got, r); return nil }
	if err := EachFetchRecord([]string{dir, dir + "/absent"}, time.Now().Add(-time.Minute), collect); err != nil {
		t.Fatal(err)
	}
	want := []FetchRecord{
		{URL: "http://a.test/", Date: date.Truncate(time.Microsecond), RecordID: full.RecordID, Status: 200, PayloadDigest: full.PayloadDigest,
			ETag: `"v1"`, LastModified: "Mon, 07 Dec 2026 09:00:00 GMT", Bytes: int64(len(ok))},
		{URL: "http://a.test/copy", Date: date.Add(time.Second).Truncate(time.Microsecond), RecordID: dup.RecordID, Revisit: true, Status: 200,
			PayloadDigest: dup.PayloadDigest, ETag: `"v1"`, LastModified: "Mon, 07 Dec 2026 09:00:00 GMT", Bytes: int64(len(ok))},
	}
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if !got[i].Date.Equal(want[i].Date) {
			t.Errorf("record %d dated %v, want %v", i, got[i].Date, want[i].Date)
		}
		got[i].Date = want[i].Date
		if got[i] != want[i] {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}

	files, _ := WARCFiles([]string{dir})
	old := time.Now().Add(-time.Hour)
	for _, f := range files {
		if err := os.Chtimes(f, old, old); err != nil {
			t.Fatal(err)
		}
	}
	got = nil
	if err := EachFetchRecord([]string{dir}, time.Now().Add(-time.Minute), collect); err != nil || len(got) != 0 {
		t.Fatalf("files modified an hour ago read for the last minute: %+v, %v", got, err)
	}
}
