package e2e

import (
	"net/netip"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestClusterBalance crawls a web of 600 addresses (one host each, as
// many pages each) with three agents, and a fourth joins mid-crawl. Keys
// are owned by rendezvous hashing of their address group, so an agent's
// share of the pages is a sum over groups: with g groups per agent its
// spread is about 1/√g of its share (at 200 groups an agent, a share of
// a third is 33 % ± 1.9 %, one standard deviation; at 10 groups, ± 8.6 %). Judged from the web's own log (each
// agent's User-Agent names it): before the join each of the three
// fetched 33 % ± 8 % of the pages (from a second after each held the
// first view), and after it (once the view with the fourth has been in
// force for a second) each of the four 25 % ± 8 %.
// Politeness, coverage and exactly-once are judged as everywhere.
func TestClusterBalance(t *testing.T) {
	t.Parallel() // waits more than it computes, on a web in its own process: see the package doc
	const hostDelay, ipDelay = 300 * time.Millisecond, 100 * time.Millisecond
	web := startWebProcess(t, testweb.Config{Hosts: 600, HostsPerIP: 1, PagesPerHost: 8, Seed: 41,
		FirstIP: netip.MustParseAddr("127.90.0.1")})
	c := newClusterRun(t, web, "127.213.40.1", 4)
	c.moved = true
	first, late := c.agents[:3], c.agents[3]
	flags := append(c.flags(hostDelay, ipDelay), "--cluster-wait", "3")
	for _, a := range first {
		c.start(t, a, append(flags, deathUA(a)...)...)
	}
	for _, a := range first {
		a.waitFor(t, "view epoch ", 20*time.Second)
	}
	formed := time.Now()                      // every agent holds the first view
	waitPages(t, first, 1200, 60*time.Second) // a share of the crawl before the join, however loaded the machine
	joining := time.Now()
	c.start(t, late, append(flags, deathUA(late)...)...)
	late.waitFor(t, "petrel: agent agent4: view epoch ", 30*time.Second)
	joined := time.Now()
	errs := c.wait(t, 120*time.Second)
	for _, a := range c.agents {
		if errs[a.name] != nil {
			t.Errorf("agent %s: %v\n%s", a.name, errs[a.name], a.stderr.String())
		}
	}
	c.judge(t, hostDelay, ipDelay, 2)
	before, after := map[string]int{}, map[string]int{}
	var nBefore, nAfter int
	var firstByLate time.Time
	for _, h := range web.hits(t) {
		if byAgent(h) == late.name && (firstByLate.IsZero() || h.Start.Before(firstByLate)) {
			firstByLate = h.Start
		}
		switch {
		case h.Start.Before(formed.Add(time.Second)):
			// The start: agents take up their seeds at different moments.
		case h.Start.Before(joining):
			before[byAgent(h)]++
			nBefore++
		case h.Start.After(joined.Add(time.Second)):
			after[byAgent(h)]++
			nAfter++
		}
	}
	t.Logf("join: agent4 started; its view %s later, its first request %s after its start",
		joined.Sub(joining).Round(time.Millisecond), firstByLate.Sub(joining).Round(time.Millisecond))
	share := func(what string, counts map[string]int, n int, want float64) {
		for _, a := range c.agents {
			if what == "before the join" && a == late {
				continue
			}
			s := float64(counts[a.name]) / float64(n)
			t.Logf("%s: %s fetched %.1f %% of %d requests", what, a.name, 100*s, n)
			if s < want-0.08 || s > want+0.08 {
				t.Errorf("%s: %s fetched %.1f %% of the %d requests, want %.0f %% ± 8 %%", what, a.name, 100*s, n, 100*want)
			}
		}
	}
	if nBefore < 1000 || nAfter < 1000 {
		t.Fatalf("%d requests before the join and %d after it: too few to judge the balance", nBefore, nAfter)
	}
	share("before the join", before, nBefore, 1.0/3)
	share("after the join", after, nAfter, 1.0/4)
}

// progressPages matches the page count of an agent's progress line.
var progressPages = regexp.MustCompile(`(?m)^\s*pages (\d+) `)

// waitPages waits until the agents' progress lines add up to at least n
// pages, failing after timeout.
func waitPages(t *testing.T, agents []*agentProc, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		sum := 0
		for _, a := range agents {
			if m := progressPages.FindAllStringSubmatch(a.stderr.String(), -1); len(m) > 0 {
				p, _ := strconv.Atoi(m[len(m)-1][1])
				sum += p
			}
		}
		if sum >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agents fetched %d pages in %s, want %d", sum, timeout, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
