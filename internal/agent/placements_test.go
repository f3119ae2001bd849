package agent

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestRestartKeepsPlacements: an agent of a cluster (of one) stopped
// mid-crawl places each host, at its next start, at the address it placed
// it at before, although its hosts file now names another address for
// it: the placements are kept in state/cluster/placements.
func TestRestartKeepsPlacements(t *testing.T) {
	var keyFile string
	c := newTestCrawl(t, "127.61.9.1", 6, 40, func(cfg *Config, w *testweb.Web) {
		keyFile = filepath.Join(filepath.Dir(cfg.Dir), "cluster.key")
		if err := cluster.WriteKeyFile(keyFile); err != nil {
			t.Fatal(err)
		}
		cfg.Cluster.Agent, cfg.Cluster.KeyFile, cfg.Cluster.Wait = "a1", keyFile, 1
		cfg.Cluster.Bind = fmt.Sprintf("127.61.9.250:%d", 20000+4*rand.IntN(10000))
		cfg.Cluster.Coordinators = coordinatorOf("a1", cfg.Cluster.Bind)
		cfg.Cluster.Lease, cfg.Cluster.BatchDelay = 2*time.Second, 5*time.Millisecond
		cfg.Frontier.HostDelay = 20 * time.Millisecond
	})
	done := make(chan error, 1)
	go func() { done <- c.a.Run(context.Background()) }()
	deadline := time.Now().Add(30 * time.Second)
	for c.a.stats.Fetched.Load() < 20 {
		if time.Now().After(deadline) {
			t.Fatal("fewer than 20 pages fetched in 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.a.clusterHost.Stop("test") // a whole-crawl stop
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	host := c.web.Hosts()[0]
	was, err := c.web.AddrOf(host)
	if err != nil {
		t.Fatal(err)
	}
	first := c.a.router.placed
	if a, ok := first.Get(host); !ok || a != was {
		t.Fatalf("%s placed at %v %v in the first run, want %v", host, a, ok, was)
	}

	// The next start, with the host at another address in the hosts file.
	moved := netip.MustParseAddr("127.61.9.200")
	b, err := os.ReadFile(c.cfg.Fetch.HostsFile)
	if err != nil {
		t.Fatal(err)
	}
	hosts := strings.Replace(string(b), was.String()+" "+host+"\n", moved.String()+" "+host+"\n", 1)
	if hosts == string(b) {
		t.Fatalf("%s not in the hosts file", host)
	}
	cfg := c.cfg
	cfg.Fetch.HostsFile = filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(cfg.Fetch.HostsFile, []byte(hosts), 0o644); err != nil {
		t.Fatal(err)
	}
	a2, err := Open(cfg, nil)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer a2.closeAll()
	if a2.router.placed.Len() != first.Len() {
		t.Errorf("%d hosts placed after the restart, %d before", a2.router.placed.Len(), first.Len())
	}
	if a, ok := a2.router.placed.Get(host); !ok || a != was {
		t.Errorf("%s placed at %v %v after the restart, want %v (its first placement), not %v", host, a, ok, was, moved)
	}
}
