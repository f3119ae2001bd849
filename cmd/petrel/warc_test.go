package main

import (
	"archive/zip"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/store"
)

// TestWarcCatRefusesWACZ: given a WACZ package, warc cat says it reads
// WARC files and crawl directories (a usage error), instead of failing
// on the zip as a torn WARC record.
func TestWarcCatRefusesWACZ(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crawl.wacz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	if _, err := zw.Create("datapackage.json"); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(zw.Close(), f.Close()); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"http://a.test/", path}, {path + ":0"}} {
		_, _, err := locate(args, "", time.Time{})
		var fe flagError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), "is a WACZ package: warc cat reads WARC files and crawl directories") {
			t.Errorf("warc cat %s: %v, want a usage error saying it reads WARC files and crawl directories", strings.Join(args, " "), err)
		}
	}
}

// runWarc runs "petrel warc ARGS" and returns its stdout, its stderr and
// its error.
func runWarc(args ...string) (stdout, stderr string, err error) {
	cmd := warcCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

// writeWARC writes a WARC file with one exchange into dir and returns its
// path.
func writeWARC(t *testing.T, dir string) string {
	t.Helper()
	w, err := store.Open(store.Options{Dir: dir, DigestsExpected: 100})
	if err != nil {
		t.Fatal(err)
	}
	resp := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi"
	if _, err := w.Write(&store.Exchange{TargetURI: "http://a.test/", IP: "127.0.0.1", Date: time.Now(),
		Request: []byte("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n"), Response: []byte(resp)}); err != nil {
		t.Fatal(err)
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

// TestWarcCheckNoFiles checks that "warc check" and "warc ls" of a folder
// without a finished WARC file fail (exit 1, not a usage error) and say
// how many open files they skipped, and that an open file beside a
// finished one is named, not passed over in silence.
func TestWarcCheckNoFiles(t *testing.T) {
	empty := t.TempDir()
	onlyOpen := t.TempDir()
	if err := os.WriteFile(filepath.Join(onlyOpen, "petrel-20260101000000-00000.warc.gz.open"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{empty, "(0 open files skipped)"},
		{onlyOpen, "(1 open file skipped)"},
	} {
		for _, sub := range []string{"check", "ls"} {
			_, stderr, err := runWarc(sub, c.dir)
			if err == nil || !strings.Contains(err.Error(), "no WARC files") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("warc %s of %s: %v; want no WARC files %s", sub, c.dir, err, c.want)
			}
			if fe := (flagError{}); errors.As(err, &fe) {
				t.Errorf("warc %s of %s: a usage error (exit 2), want exit 1", sub, c.dir)
			}
			if c.dir == onlyOpen && !strings.Contains(stderr, ".warc.gz.open: still open") {
				t.Errorf("warc %s of %s did not name the open file: %q", sub, c.dir, stderr)
			}
		}
	}

	// A finished file is checked; the open one beside it is named.
	both := t.TempDir()
	finished := writeWARC(t, both)
	open := filepath.Join(both, "petrel-20260101000000-00001.warc.gz.open")
	if err := os.WriteFile(open, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runWarc("check", both)
	if err != nil || !strings.Contains(stdout, finished+": 3 records, digests ok") {
		t.Errorf("warc check of a finished and an open file: %v\n%s", err, stdout)
	}
	if !strings.Contains(stderr, open+": still open") || !strings.Contains(stderr, "not checked") {
		t.Errorf("warc check did not report the open file %s: %q", open, stderr)
	}
}
