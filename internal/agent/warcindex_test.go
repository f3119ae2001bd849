package agent

import (
	"bytes"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/store"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestCutWARCFileLeftOutOfIndex: a finished WARC file of an earlier run,
// cut short since, is left out of the merged index at the end of the next
// run, which says so on its progress writer and in its event log and ends
// as it would have (not "crawl failed").
func TestCutWARCFileLeftOutOfIndex(t *testing.T) {
	_, root, hostsFile, seeds := startTestWeb(t, testweb.Config{Hosts: 4, HostsPerIP: 2, PagesPerHost: 30, Seed: 3,
		FirstIP: netip.MustParseAddr("127.61.23.1")})
	dir := filepath.Join(root, "crawl")
	cfg := testConfig(dir, hostsFile, seeds)
	cfg.Frontier.MaxURLs = 20
	openAndRun(t, cfg, io.Discard)
	files, err := store.WARCFiles([]string{dir})
	if err != nil || len(files) != 1 {
		t.Fatalf("WARC files of the first run: %v, %v", files, err)
	}
	cut := files[0]
	fi, err := os.Stat(cut)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(cut, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour) // newer than its index: indexed again
	os.Chtimes(cut, later, later)

	cfg.Frontier.MaxURLs = 0
	var progress bytes.Buffer
	openAndRun(t, cfg, &progress) // not "crawl failed"
	base := filepath.Base(cut)
	if !strings.Contains(progress.String(), base) || !strings.Contains(progress.String(), "left out of the index") {
		t.Errorf("the run did not say %s was left out of the index:\n%s", base, progress.String())
	}
	events, _ := os.ReadFile(filepath.Join(dir, "logs", "events.jsonl"))
	if !bytes.Contains(events, []byte("WARC file left out")) || !bytes.Contains(events, []byte(base)) {
		t.Errorf("the event log does not name %s as left out of the index", base)
	}
	index, err := os.ReadFile(store.MergedIndex(dir))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(index, []byte(base)) || len(index) == 0 {
		t.Errorf("the merged index (%d bytes) holds lines of the cut file, or none of the others", len(index))
	}
}

// TestOpenWARCFileLeftRepaired: a WARC file left open by an earlier run
// that removed state/RUNNING (as a close that failed did) is cut after
// its last whole record, renamed, indexed and said at the next start.
func TestOpenWARCFileLeftRepaired(t *testing.T) {
	_, root, hostsFile, seeds := startTestWeb(t, testweb.Config{Hosts: 4, HostsPerIP: 2, PagesPerHost: 30, Seed: 3,
		FirstIP: netip.MustParseAddr("127.61.27.1")})
	dir := filepath.Join(root, "crawl")
	cfg := testConfig(dir, hostsFile, seeds)
	cfg.Frontier.MaxURLs = 20
	openAndRun(t, cfg, io.Discard)
	files, err := store.WARCFiles([]string{dir})
	if err != nil || len(files) != 1 {
		t.Fatalf("WARC files of the first run: %v, %v", files, err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(dir, "warc", "petrel-20200101000000-00000.warc.gz")
	if err := os.WriteFile(left+".open", b[:len(b)-20], 0o644); err != nil { // a torn last record
		t.Fatal(err)
	}

	cfg.Frontier.MaxURLs = 0
	var progress bytes.Buffer
	openAndRun(t, cfg, &progress)
	if !strings.Contains(progress.String(), "left open by an earlier run") || !strings.Contains(progress.String(), filepath.Base(left)) {
		t.Errorf("the start did not say it repaired %s:\n%s", filepath.Base(left), progress.String())
	}
	if _, err := store.CheckFile(left); err != nil {
		t.Errorf("the repaired file: %v", err)
	}
	index, _ := os.ReadFile(store.MergedIndex(dir))
	if !bytes.Contains(index, []byte(filepath.Base(left))) {
		t.Errorf("the merged index has no capture of the repaired file %s", filepath.Base(left))
	}
}
