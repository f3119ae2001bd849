package agent

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestClusterWideSavedWinsOverCommandLine: in a crawl of several agents, a
// cluster-wide setting changed while the crawl ran (on every agent) is
// kept at the next start even when the command line gives it again, so
// that the same commands resume the crawl with the values every agent
// holds; any other setting given on the command line still wins.
func TestClusterWideSavedWinsOverCommandLine(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "state"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "state", liveFile), []byte(`{"host-delay": "300ms", "fetchers": 9}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, agent := range []bool{false, true} {
		cfg := Defaults()
		cfg.Dir = dir
		cfg.Frontier.HostDelay, cfg.Fetchers = 120*time.Millisecond, 11
		cfg.Given = []string{"host-delay", "fetchers"}
		if agent {
			cfg.Cluster.Bind, cfg.Cluster.Agent = "127.0.0.1:7946", "a1"
		}
		if _, err := loadLive(&cfg, func(string, ...any) {}); err != nil {
			t.Fatal(err)
		}
		want := 120 * time.Millisecond
		if agent {
			want = 300 * time.Millisecond
		}
		if cfg.Frontier.HostDelay != want || cfg.Fetchers != 11 {
			t.Errorf("agent of a cluster %v: host-delay %s, fetchers %d; want %s and the command line's 11", agent, cfg.Frontier.HostDelay, cfg.Fetchers, want)
		}
	}
}
