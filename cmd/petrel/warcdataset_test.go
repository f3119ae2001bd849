package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/petrel-crawler/petrel/internal/dataset"
)

// TestWarcDatasetCommands: warc wat, wet and parquet write their outputs
// for a crawl directory, the index's warc_filename relative to it.
func TestWarcDatasetCommands(t *testing.T) {
	dir := t.TempDir()
	warc := writeWARC(t, filepath.Join(dir, "warc"))
	for _, c := range []struct{ cmd, out string }{{"wat", dataset.WATName(warc)}, {"wet", dataset.WETName(warc)}} {
		stdout, stderr, err := runWarc(c.cmd, dir)
		if err != nil || !strings.HasPrefix(stdout, c.out+": ") {
			t.Errorf("warc %s: %v %q %q", c.cmd, err, stdout, stderr)
		}
		if _, err := os.Stat(c.out); err != nil {
			t.Error(err)
		}
	}
	if _, _, err := runWarc("wet", "--text", "all", dir); err != nil {
		t.Errorf("warc wet --text all: %v", err)
	}
	if _, _, err := runWarc("wet", "--text", "most", dir); err == nil || !strings.Contains(err.Error(), `text "most"`) {
		t.Errorf("warc wet --text most: %v, want an error naming it", err)
	}
	stdout, stderr, err := runWarc("parquet", dir)
	if err != nil || !strings.Contains(stdout, "1 rows from 1 WARC files") {
		t.Fatalf("warc parquet: %v %q %q", err, stdout, stderr)
	}
	rows, err := dataset.ReadRows(dataset.CrawlIndex(dir))
	if err != nil || len(rows) != 1 || rows[0].WARCFilename != "warc/"+filepath.Base(warc) {
		t.Errorf("rows %+v, %v", rows, err)
	}
}
