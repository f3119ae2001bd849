package benchscale

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrepareCrawlDir checks that a new run empties the crawl directory and
// a resumed one keeps it, refuses a directory with no crawl in it, and
// notes where the crawl stood.
func TestPrepareCrawlDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "crawl")
	if _, err := prepareCrawlDir(Options{Resume: true}, dir); err == nil || !strings.Contains(err.Error(), "nothing to resume") {
		t.Fatalf("resume of an empty directory: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	progress := `{"SieveNew": 94000000, "Fetched": 1900000}`
	if err := os.WriteFile(filepath.Join(dir, "state", "progress.json"), []byte(progress), 0o644); err != nil {
		t.Fatal(err)
	}
	note, err := prepareCrawlDir(Options{Resume: true}, dir)
	if err != nil || !strings.Contains(note, "at 94000000 known, 1900000 pages") {
		t.Fatalf("resume: note %q, err %v", note, err)
	}
	if _, err := prepareCrawlDir(Options{}, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a new run left the earlier crawl: %v", err)
	}
	if _, err := (Options{Resume: true}).withDefaults(); err == nil {
		t.Fatal("resume without a work directory accepted")
	}
}
