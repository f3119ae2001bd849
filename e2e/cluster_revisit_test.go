package e2e

import (
	"net/netip"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestClusterRevisit runs a revisit crawl on three agents; a fourth
// joins, then one of the first leaves, and `petrel cluster stop` ends it.
// Judged from the web's own log: every page is fetched; no page twice
// within the revisit interval (each due time once, across the moves of
// schedule entries); pages first fetched by others revisited by the
// joiner (their entries moved to it at the join's hand-off, as the
// others' event logs say); every page fetched
// again after the leave, the leaver's included (its schedule moved with
// its addresses); politeness across the union of the agents.
func TestClusterRevisit(t *testing.T) {
	t.Parallel() // waits more than it computes: see the package doc
	const hostDelay, ipDelay = 100 * time.Millisecond, 50 * time.Millisecond
	const interval = 2 * time.Second
	web := startWeb(t, testweb.Config{Hosts: 12, HostsPerIP: 2, PagesPerHost: 6, Seed: 53,
		FirstIP: netip.MustParseAddr("127.61.29.1")})
	c := newClusterRun(t, web, "127.213.29.1", 4)
	c.moved = true
	flags := append(c.flags(hostDelay, ipDelay), "--cluster-wait", "3", "--leave-timeout", leaveTimeout.String(),
		"--revisit", "--revisit-min", interval.String(), "--revisit-max", interval.String())
	first, joiner, leaver := c.agents[:3], c.agents[3], c.agents[1]
	for _, a := range first {
		c.start(t, a, append(flags, deathUA(a)...)...)
	}
	leaver.waitFor(t, "view epoch ", 20*time.Second)
	time.Sleep(2 * interval) // the first pass, and revisits
	joined := time.Now()
	c.start(t, joiner, append(flags, deathUA(joiner)...)...)
	joiner.waitFor(t, "petrel: agent "+joiner.name+": view epoch ", 30*time.Second)
	time.Sleep(interval + time.Second)
	leaver.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-leaver.done:
		leaver.done <- err // for wait below
		if err != nil || !strings.Contains(leaver.stderr.String(), "left the crawl: everything handed over") {
			t.Fatalf("leave: %v\n%s", err, leaver.stderr.String())
		}
	case <-time.After(leaveTimeout + 5*time.Second):
		t.Fatalf("%s did not leave within its --leave-timeout:\n%s", leaver.name, leaver.stderr.String())
	}
	left := time.Now()
	time.Sleep(2*interval + time.Second)
	if out, err := exec.Command(petrel, "cluster", "stop", "--coordinators", c.coordinators(), "--cluster-name", "e2e", "--cluster-key-file", c.key).CombinedOutput(); err != nil {
		t.Fatalf("petrel cluster stop: %v\n%s", err, out)
	}
	errs := c.wait(t, 60*time.Second)
	for _, a := range c.agents {
		if errs[a.name] != nil {
			t.Errorf("agent %s: %v\n%s", a.name, errs[a.name], a.stderr.String())
		}
	}
	hits := web.hits(t)
	checkRevisitsAcrossLeave(t, c, hits, leaver.name, left, interval)
	checkRevisitedByJoiner(t, hits, joiner.name, joined)
	if len(logTimes(t, c.agents[0], "revisit schedule entries moved"))+len(logTimes(t, c.agents[2], "revisit schedule entries moved")) == 0 {
		t.Error("no agent that stayed moved a revisit schedule entry at the join's hand-off")
	}
	checkPolitenessWithin(t, hits, hostDelay, ipDelay, clusterTolerance)
}

// checkRevisitsAcrossLeave judges a revisit crawl's pages from the web's
// log: each fetched, never twice within interval, and again after left
// when its first answer was a 200 (the others are not scheduled).
func checkRevisitsAcrossLeave(t *testing.T, c *clusterRun, hits []testweb.Hit, leaver string, left time.Time, interval time.Duration) {
	t.Helper()
	byPage := map[string][]testweb.Hit{}
	for _, h := range hits {
		if h.Path != "/robots.txt" {
			byPage[key(h.Host, h.Path)] = append(byPage[key(h.Host, h.Path)], h)
		}
	}
	// The next due time counts from the crawler's start of a request,
	// which the server logs later by its connection's set-up and, on a
	// loaded machine, its own scheduling (a stall of the web's process
	// delays a burst of requests by 150 ms at times). Two fetches of one
	// due time are both overdue at once: far closer than this.
	slack := interval / 4
	leaversPages, revisits := 0, 0
	for _, u := range c.web.expected() {
		k := urlKey(t, u)
		hs := byPage[k]
		if len(hs) == 0 {
			t.Errorf("%s never fetched", k)
			continue
		}
		sort.Slice(hs, func(i, j int) bool { return hs[i].Start.Before(hs[j].Start) })
		revisits += len(hs) - 1
		lastBefore, again := "", false
		for i, h := range hs {
			if i > 0 && h.Start.Sub(hs[i-1].Start) < interval-slack {
				t.Errorf("%s fetched by %s at %s and by %s %v later: a due time done twice", k, byAgent(hs[i-1]),
					hs[i-1].Start.Format("15:04:05.000"), byAgent(h), h.Start.Sub(hs[i-1].Start))
			}
			if h.Start.Before(left) {
				lastBefore = byAgent(h)
			} else {
				again = again || byAgent(h) != leaver
			}
		}
		if lastBefore == leaver {
			leaversPages++
		}
		if !again && hs[0].Status == 200 { // only pages fetched with a 200 are scheduled
			t.Errorf("%s (last fetched by %s before the leave) not fetched again after the leave: its due time was lost", k, lastBefore)
		}
	}
	t.Logf("%d revisits; %d pages last fetched by the leaver before it left", revisits, leaversPages)
	if leaversPages == 0 {
		t.Error("the leaver fetched no page before it left: the test proves nothing")
	}
}

// checkRevisitedByJoiner checks that the joiner revisited pages another
// agent had fetched before it joined: their entries moved to it.
func checkRevisitedByJoiner(t *testing.T, hits []testweb.Hit, joiner string, joined time.Time) {
	t.Helper()
	before := map[string]bool{} // pages fetched with a 200 before the join
	moved := 0
	for _, h := range hits {
		k := key(h.Host, h.Path)
		switch {
		case h.Path == "/robots.txt":
		case h.Start.Before(joined) && h.Status == 200:
			before[k] = true
		case byAgent(h) == joiner && before[k]:
			moved++
			before[k] = false // counted once
		}
	}
	t.Logf("%s revisited %d pages others fetched before it joined", joiner, moved)
	if moved == 0 {
		t.Errorf("%s revisited no page fetched before it joined: no schedule entry moved to it", joiner)
	}
}
