package agent

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestFailedStartLeavesNoMarker: a start that fails on its console's
// address (in use) or on the cluster's key file (mode 0644) leaves
// neither state/RUNNING nor a directory it made, and the next start of a
// crawl stopped cleanly before it resumes without a recovery.
func TestFailedStartLeavesNoMarker(t *testing.T) {
	_, root, hostsFile, seeds := startTestWeb(t, testweb.Config{Hosts: 4, HostsPerIP: 2, PagesPerHost: 30, Seed: 3,
		FirstIP: netip.MustParseAddr("127.61.22.1")})
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	keyFile := filepath.Join(root, "cluster.key")
	if err := cluster.WriteKeyFile(keyFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(keyFile, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, want string
		edit       func(*Config)
	}{
		{"console address in use", "--console-addr", func(c *Config) { c.Console.Addr = busy.Addr().String() }},
		{"key file mode 0644", "chmod 600", func(c *Config) {
			c.Cluster.Agent, c.Cluster.KeyFile, c.Cluster.Wait = "a1", keyFile, 1
			c.Cluster.Bind = fmt.Sprintf("127.61.22.250:%d", 20000+os.Getpid()%20000)
			c.Cluster.Coordinators = coordinatorOf("a1", c.Cluster.Bind)
		}},
	}
	failOpen := func(t *testing.T, dir string, edit func(*Config), want string) {
		t.Helper()
		cfg := testConfig(dir, hostsFile, seeds)
		edit(&cfg)
		a, err := Open(cfg, nil)
		if err == nil {
			a.closeAll()
			t.Fatal("Open succeeded")
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open: %v; want it to name %s", err, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "state", "RUNNING")); err == nil {
			t.Error("the failed start left state/RUNNING")
		}
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// A directory the failed start made is removed.
			fresh := filepath.Join(root, fmt.Sprintf("fresh%d", i))
			failOpen(t, fresh, c.edit, c.want)
			if _, err := os.Stat(fresh); err == nil {
				t.Error("the failed start left the directory it made")
			}

			// A crawl stopped cleanly: the failed start changes nothing
			// the next start would take for a crash.
			dir := filepath.Join(root, fmt.Sprintf("crawl%d", i))
			cfg := testConfig(dir, hostsFile, seeds)
			cfg.Frontier.MaxURLs = 10
			openAndRun(t, cfg, io.Discard)
			warcs, _ := filepath.Glob(filepath.Join(dir, "warc", "*"))
			failOpen(t, dir, c.edit, c.want)
			if after, _ := filepath.Glob(filepath.Join(dir, "warc", "*")); len(after) != len(warcs) {
				t.Errorf("the failed start added WARC files: %v, before %v", after, warcs)
			}
			cfg.Frontier.MaxURLs = 0
			var progress bytes.Buffer
			a, err := Open(cfg, &progress)
			if err != nil {
				t.Fatal(err)
			}
			defer a.closeAll()
			if strings.Contains(progress.String(), "did not stop cleanly") {
				t.Errorf("the start after a failed one recovered as from a crash: %s", progress.String())
			}
		})
	}
}
