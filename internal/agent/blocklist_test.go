package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/console"
)

// TestBlocklistSavedAndLoaded adds entries (a repeat, an address, a
// range), reads them back from the saved file into a new blocklist, and
// checks that a malformed entry changes neither the set in force nor the
// file.
func TestBlocklistSavedAndLoaded(t *testing.T) {
	path := filepath.Join(t.TempDir(), blocklistFile)
	var b blocklist
	if n, err := b.load(path); err != nil || n != 0 {
		t.Fatalf("load of a missing file: %d, %v", n, err)
	}
	if _, err := b.add([]string{"Bad.Test.", "10.1.0.0/16", "127.0.0.5"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.add([]string{"bad.test", "other.test", "fd00::/8", "10.1.2.3/16"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"bad.test", "10.1.0.0/16", "127.0.0.5", "other.test", "fd00::/8"}
	if got := b.entries(); !slices.Equal(got, want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	saved, _ := os.ReadFile(path)
	if _, err := b.add([]string{"fine.test", "10.0.0.0/33"}); err == nil {
		t.Fatal("a malformed range was accepted")
	}
	if after, _ := os.ReadFile(path); string(after) != string(saved) || b.host("fine.test") {
		t.Errorf("a refused add changed the blocklist: %s", after)
	}

	var again blocklist
	if n, err := again.load(path); err != nil || n != len(want) {
		t.Fatalf("load: %d, %v", n, err)
	}
	for host, blocked := range map[string]bool{"www.bad.test": true, "other.test": true, "10.1.7.7": true, "127.0.0.5": true,
		"[fd12::1]": true, "::ffff:10.1.0.9": true, "good.test": false, "10.2.0.1": false, "127.0.0.6": false, "fe80::1": false} {
		if again.host(host) != blocked {
			t.Errorf("loaded blocklist: %s blocked %v, want %v", host, !blocked, blocked)
		}
	}
}

// TestClusteredAgentRefusesBlocklist checks that an agent of a crawl of
// several that has not joined it yet refuses a blocklist change, which
// must reach every agent (a 409), changing nothing, and that a malformed
// entry is still a 400.
func TestClusteredAgentRefusesBlocklist(t *testing.T) {
	a := &Agent{cfg: Config{Cluster: cluster.Settings{Bind: "127.0.0.1:7946"}}}
	path := filepath.Join(t.TempDir(), blocklistFile)
	a.block.load(path)
	if _, err := a.Block(context.Background(), []string{"x.test"}); !errors.Is(err, console.ErrState) {
		t.Errorf("Block on a clustered agent: %v, want ErrState", err)
	}
	if _, err := a.Block(context.Background(), []string{"10.0.0.0/40"}); !errors.Is(err, console.ErrInvalid) {
		t.Errorf("Block of a malformed range: %v, want ErrInvalid", err)
	}
	if a.block.host("x.test") {
		t.Error("x.test is blocked")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("blocklist file written: %v", err)
	}
}

// TestWhyDirReadsBlocklist asks why of a stopped directory for a URL of a
// host its saved blocklist names.
func TestWhyDirReadsBlocklist(t *testing.T) {
	dir := t.TempDir()
	var b blocklist
	if _, err := b.load(filepath.Join(dir, "state", blocklistFile)); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "state"), 0o755)
	if _, err := b.add([]string{"blocked.test"}); err != nil {
		t.Fatal(err)
	}
	w, err := WhyDir(dir, "http://www.blocked.test/page.html")
	if err != nil {
		t.Fatal(err)
	}
	if w.State != console.WhyRefused || w.Rule != "blocklist" {
		t.Errorf("why of a blocklisted host's URL in a stopped directory: %+v", w)
	}
	if w, _ := WhyDir(dir, "http://other.test/"); w.State != console.WhyNeverSeen {
		t.Errorf("why of another URL: %+v", w)
	}
}
