package e2e

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// The elastic cluster tests: an agent joining a running crawl, and one
// leaving it. Each view change hands keys over (seen-set part, budget
// counts, queued URLs, remaining delays), so the crawl still fetches
// every page once and politely; robots.txt is fetched again by a key's
// new fetching agent (it is not handed over), so each host's robots.txt
// may come twice.

// loadView reads an agent's saved ownership view.
func loadView(t *testing.T, dir string) *cluster.View {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "state", "cluster", "view.json"))
	if err != nil {
		t.Fatal(err)
	}
	v := new(cluster.View)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
	return v
}

// shareOf returns the fraction of names that agent owns in v.
func shareOf(v *cluster.View, agent string, names []string) float64 {
	n := 0
	for _, h := range names {
		if v.Owner(h) == agent {
			n++
		}
	}
	return float64(n) / float64(len(names))
}

// webHosts lists the host names of the web's hosts file.
func webHosts(t *testing.T, hostsFile string) []string {
	var out []string
	for _, hs := range hostsByIP(t, hostsFile) {
		out = append(out, hs...)
	}
	return out
}

// TestClusterJoin starts a fourth agent into a crawl of three once it is
// under way: it is refused nothing, a view with it is written,
// the old owners hand its share over (queued URLs, seen sets and budget
// counts), and the crawl ends by itself with every page fetched once,
// politely, and no host over its budget across the agents.
func TestClusterJoin(t *testing.T) {
	t.Parallel() // waits more than it computes: see the package doc
	const hostDelay, ipDelay = 120 * time.Millisecond, 60 * time.Millisecond
	web := startWeb(t, testweb.Config{Hosts: 32, HostsPerIP: 4, PagesPerHost: 20, Seed: 29,
		FirstIP: netip.MustParseAddr("127.61.4.1")})
	c := newClusterRun(t, web, "127.213.4.1", 4)
	c.moved = true
	first, late := c.agents[:3], c.agents[3]
	// A per-key budget under the 20 pages a host has: the owner counts it,
	// and the join hands each moved key's count to its new owner.
	const budget = 15
	flags := append(c.flags(hostDelay, ipDelay), "--cluster-wait", "3", "--max-urls-per-host", fmt.Sprint(budget))
	for _, a := range first {
		c.start(t, a, flags...)
	}
	first[0].waitFor(t, "view epoch ", 20*time.Second)
	time.Sleep(1500 * time.Millisecond)
	before := len(web.web.Hits())
	c.start(t, late, flags...)
	late.waitFor(t, "petrel: agent agent4: view epoch ", 30*time.Second)
	t.Logf("agent4 joined after %d requests", before)
	// petrel cluster status, while the crawl runs (cluster_status_test.go).
	for _, m := range checkClusterStatus(t, c, loadView(t, late.dir).Epoch).Members {
		t.Logf("cluster status: %s %s, epoch %d, owns %d slots", m.Name, m.State, m.Epoch, m.KeysOwned)
		if s := float64(m.KeysOwned) / cluster.Slots; s < 0.20 || s > 0.30 {
			t.Errorf("cluster status: %s owns %.1f %% of the slots, want 25 ± 5 %%", m.Name, 100*s)
		}
	}
	errs := c.wait(t, 120*time.Second)
	for _, a := range c.agents {
		if errs[a.name] != nil {
			t.Errorf("agent %s: %v\n%s", a.name, errs[a.name], a.stderr.String())
		}
	}
	if before == 0 || before >= len(web.web.Hits()) {
		t.Fatalf("the join was not mid-crawl: %d requests before it, %d in all", before, len(web.web.Hits()))
	}
	v := loadView(t, late.dir)
	if len(v.Agents) != 4 {
		t.Fatalf("agent4's view is %s, want 4 agents", v)
	}
	names := make([]string, 100_000)
	for i := range names {
		names[i] = fmt.Sprintf("h%d.example.test", i)
	}
	share := shareOf(v, late.name, names)
	t.Logf("agent4 owns %.1f %% of 10^5 host names and %.1f %% of the web's hosts", 100*share, 100*shareOf(v, late.name, webHosts(t, web.hosts)))
	if share < 0.20 || share > 0.30 {
		t.Errorf("agent4 owns %.1f %% of the keys, want 25 ± 5 %%", 100*share)
	}
	st := readStats(t, late.dir)
	old := map[string]int64{}
	for _, a := range first {
		s := readStats(t, a.dir)
		for _, k := range []string{"HandedOverKeys", "HandedOverURLs", "HandedOverSeen"} {
			old[k] += s[k]
		}
	}
	t.Logf("agent4 fetched %d pages, received %d seen-set entries; the old owners handed over %d keys, %d queued URLs, %d seen-set entries",
		st["Fetched"], st["ReceivedSeen"], old["HandedOverKeys"], old["HandedOverURLs"], old["HandedOverSeen"])
	if st["Fetched"] == 0 || st["ReceivedSeen"] == 0 || old["HandedOverSeen"] != st["ReceivedSeen"] {
		t.Errorf("agent4 fetched %d pages and received %d seen-set entries of %d handed over", st["Fetched"], st["ReceivedSeen"], old["HandedOverSeen"])
	}
	t.Logf("agent4 stopped %d hosts at the budget", len(overBudgetHosts(t, late)))
	c.judgeBudget(t, hostDelay, ipDelay, 2, budget)
}

// leaveTimeout is the leave tests' --leave-timeout: well past what a
// leave takes on a loaded machine (its view change alone takes seconds
// there), since a leave timed out exits 1.
const leaveTimeout = 12 * time.Second

// TestClusterLeave sends SIGTERM to one agent of three mid-crawl: it
// agrees a view without itself, hands everything over, waits for the
// acknowledgements and exits 0 within --leave-timeout; the two others
// finish the crawl with every page fetched once, politely.
func TestClusterLeave(t *testing.T) {
	t.Parallel() // waits more than it computes: see the package doc
	const hostDelay, ipDelay = 120 * time.Millisecond, 60 * time.Millisecond
	web := startWeb(t, testweb.Config{Hosts: 24, HostsPerIP: 4, PagesPerHost: 20, Seed: 31,
		FirstIP: netip.MustParseAddr("127.61.5.1")})
	c := newClusterRun(t, web, "127.213.5.1", 3)
	c.moved = true
	flags := append(c.flags(hostDelay, ipDelay), "--cluster-wait", "3", "--leave-timeout", leaveTimeout.String())
	for _, a := range c.agents {
		c.start(t, a, flags...)
	}
	leaver := c.agents[1]
	leaver.waitFor(t, "view epoch ", 20*time.Second)
	time.Sleep(1500 * time.Millisecond)
	before := len(web.web.Hits())
	sent := time.Now()
	leaver.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-leaver.done:
		leaver.done <- err // for wait below
		t.Logf("%s left %s after the SIGTERM (%d requests before it)", leaver.name, time.Since(sent).Round(time.Millisecond), before)
		if err != nil || !strings.Contains(leaver.stderr.String(), "left the crawl: everything handed over") {
			t.Fatalf("leave: %v\n%s", err, leaver.stderr.String())
		}
	case <-time.After(leaveTimeout + 5*time.Second):
		t.Fatalf("%s did not leave within its --leave-timeout:\n%s", leaver.name, leaver.stderr.String())
	}
	errs := c.wait(t, 90*time.Second)
	for _, a := range c.agents {
		if errs[a.name] != nil {
			t.Errorf("agent %s: %v\n%s", a.name, errs[a.name], a.stderr.String())
		}
	}
	if v := loadView(t, c.agents[0].dir); v.Has(leaver.name) || len(v.Absent) > 0 {
		t.Errorf("view after the leave: %s", v)
	}
	st := readStats(t, leaver.dir)
	t.Logf("the leaver handed over %d keys, %d queued URLs, %d seen-set entries", st["HandedOverKeys"], st["HandedOverURLs"], st["HandedOverSeen"])
	if st["HandedOverSeen"] == 0 {
		t.Error("the leaver handed over no seen-set entries")
	}
	c.judge(t, hostDelay, ipDelay, 2)
}

// TestClusterLeaveKilled sends SIGTERM to one agent of three mid-crawl
// and kills it (kill -9, by PETREL_CRASH_AT) in the middle of its leave:
// one new owner has its release, the other not yet. Started again on its
// directory it resumes the leave — the rest handed over, exit 0 — and
// started once more (its view without itself) it asks to join again, is
// given keys in a new view and the crawl ends by itself with every page
// fetched once, politely, across the four runs.
func TestClusterLeaveKilled(t *testing.T) {
	t.Parallel() // waits more than it computes: see the package doc
	const hostDelay, ipDelay = 200 * time.Millisecond, 60 * time.Millisecond
	web := startWeb(t, testweb.Config{Hosts: 24, HostsPerIP: 4, PagesPerHost: 30, Seed: 37,
		FirstIP: netip.MustParseAddr("127.61.13.1")})
	c := newClusterRun(t, web, "127.213.13.1", 3)
	c.moved = true
	flags := append(c.flags(hostDelay, ipDelay), "--cluster-wait", "3", "--leave-timeout", leaveTimeout.String())
	leaver := c.agents[1]
	leaver.env = []string{"PETREL_CRASH_AT=handoff-release:1"}
	for _, a := range c.agents {
		c.start(t, a, flags...)
	}
	leaver.waitFor(t, "view epoch ", 20*time.Second)
	time.Sleep(1500 * time.Millisecond)
	leaver.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-leaver.done:
		if err == nil || !strings.Contains(leaver.stderr.String(), "killing myself at handoff-release") {
			t.Fatalf("the leave was not killed at its first release: %v\n%s", err, leaver.stderr.String())
		}
	case <-time.After(leaveTimeout + 5*time.Second):
		t.Fatalf("%s did not reach its first release:\n%s", leaver.name, leaver.stderr.String())
	}
	leaver.env = nil
	restarted := time.Now()
	c.start(t, leaver, flags...)
	select {
	case err := <-leaver.done:
		t.Logf("%s resumed its leave and left %s after its restart", leaver.name, time.Since(restarted).Round(time.Millisecond))
		if out := leaver.stderr.String(); err != nil || !strings.Contains(out, "resuming the leave") || !strings.Contains(out, "left the crawl: everything handed over") {
			t.Fatalf("resumed leave: %v\n%s", err, out)
		}
	case <-time.After(leaveTimeout + 10*time.Second):
		t.Fatalf("%s did not finish its resumed leave:\n%s", leaver.name, leaver.stderr.String())
	}
	left := loadView(t, leaver.dir)
	if left.Has(leaver.name) {
		t.Fatalf("the leaver's view after its leave: %s", left)
	}
	c.start(t, leaver, flags...)
	leaver.waitFor(t, "petrel: agent "+leaver.name+": view epoch ", 30*time.Second)
	errs := c.wait(t, 90*time.Second)
	for _, a := range c.agents {
		if errs[a.name] != nil {
			t.Errorf("agent %s: %v\n%s", a.name, errs[a.name], a.stderr.String())
		}
	}
	if v := loadView(t, c.agents[0].dir); !v.Has(leaver.name) || v.Epoch <= left.Epoch {
		t.Errorf("view after the rejoin: %s (the leave's was %s)", v, left)
	}
	c.judge(t, hostDelay, ipDelay, 3)
}
