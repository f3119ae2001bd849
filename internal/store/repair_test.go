package store

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRepairCutsTornRecord writes records, leaves the file open as a crash
// would, tears its last record, and checks that Repair keeps exactly the
// complete records and that gowarc reads the result through.
func TestRepairCutsTornRecord(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(Options{Dir: dir, DigestsExpected: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		body := strings.Repeat("x", 100+i)
		resp := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
		if _, err := w.Write(&Exchange{TargetURI: "http://a.test/" + strconv.Itoa(i), IP: "127.0.0.1", Date: time.Now(),
			Request: []byte("GET /" + strconv.Itoa(i) + " HTTP/1.1\r\nHost: a.test\r\n\r\n"), Response: []byte(resp)}); err != nil {
			t.Fatal(err)
		}
	}
	// Simulate the crash: copy the open file aside before Close renames it.
	open, _ := filepath.Glob(filepath.Join(dir, "*.open"))
	if len(open) != 1 {
		t.Fatalf("%d open files", len(open))
	}
	data, err := os.ReadFile(open[0])
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	for _, f := range mustGlob(t, dir) {
		os.Remove(f)
	}
	torn := open[0]
	if err := os.WriteFile(torn, data[:len(data)-30], 0o644); err != nil {
		t.Fatal(err)
	}
	report, err := Repair(dir, true, IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	final := strings.TrimSuffix(torn, ".open")
	if !strings.Contains(report, "cut a torn record") || !strings.Contains(report, filepath.Base(final)+" closed with 10 records") {
		t.Errorf("report %q does not say a torn record was cut and how many records were kept", report)
	}
	// The repaired file is indexed: its four whole responses.
	idx, err := os.ReadFile(fileIndexName(final))
	if err != nil {
		t.Fatalf("no index written for the repaired file: %v", err)
	}
	var want strings.Builder
	if err := WriteCDXJ([]string{final}, &want, IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	if string(idx) != want.String() || strings.Count(string(idx), "\n") != 4 {
		t.Errorf("index of the repaired file:\n%s\nwant its 4 responses:\n%s", idx, want.String())
	}
	n, err := CheckFile(final)
	if err != nil {
		t.Fatalf("repaired file does not read through: %v", err)
	}
	// warcinfo + 5 × (request, response), the last response torn off.
	if n != 10 {
		t.Errorf("%d records kept, want 10", n)
	}
	if c := CountResponsesAfter(dir, nil); c != 4 {
		t.Errorf("CountResponsesAfter = %d, want 4", c)
	}
	if c := CountResponsesAfter(dir, map[string]int64{filepath.Base(final): 1 << 40}); c != 0 {
		t.Errorf("CountResponsesAfter beyond the end = %d, want 0", c)
	}
}

func mustGlob(t *testing.T, dir string) []string {
	m, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
