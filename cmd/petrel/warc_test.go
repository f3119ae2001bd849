package main

import (
	"archive/zip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
