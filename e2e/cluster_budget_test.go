package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/crawllog"
)

// judgeBudget is judge for a crawl under a --max-urls-per-host budget: no
// host has more than budget pages fetched across the union of the agents
// (the owner counts the budget, and a moved key's count moves with it),
// and checkFetches expects every URL but those not fetched of the hosts
// that reached the budget (an agent logged an over-budget skip of one of
// their URLs): they are given up as a forget's are; robots.txt,
// politeness and the WARC union as judge.
func (c *clusterRun) judgeBudget(t *testing.T, hostDelay, ipDelay time.Duration, starts int, budget int) {
	t.Helper()
	hits := c.web.hits(t)
	over := overBudgetHosts(t, c.agents...)
	if c.givenUp == nil {
		c.givenUp = map[string]bool{}
	}
	for _, u := range c.web.expected() {
		if k := urlKey(t, u); over[strings.SplitN(k, " ", 2)[0]] {
			c.givenUp[k] = true
		}
	}
	expected, _ := c.checkFetches(t, hits, true)
	perHost := map[string]map[string]bool{}
	for _, h := range hits {
		if h.Path != "/robots.txt" {
			if perHost[h.Host] == nil {
				perHost[h.Host] = map[string]bool{}
			}
			perHost[h.Host][h.Path] = true
		}
	}
	for host, pages := range perHost {
		if len(pages) > budget {
			t.Errorf("host %s: %d pages fetched across the agents, over the budget %d", host, len(pages), budget)
		}
	}
	t.Logf("%d of %d hosts reached the budget of %d pages", len(over), len(perHost), budget)
	if len(over) == 0 {
		t.Errorf("no host reached the budget of %d: the test checks nothing of it", budget)
	}
	c.checkRobots(t, hits, starts)
	checkPolitenessWithin(t, hits, hostDelay, ipDelay, clusterTolerance)
	c.checkArchive(t, expected, len(hits), len(hits))
}

// overBudgetHosts returns the hosts of which one of agents logged a URL
// skipped over the budget (logs/skipped.jsonl).
func overBudgetHosts(t *testing.T, agents ...*agentProc) map[string]bool {
	t.Helper()
	hosts := map[string]bool{}
	for _, a := range agents {
		for _, f := range crawllog.Files(filepath.Join(a.dir, "logs", "skipped.jsonl")) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if s, err := crawllog.ParseSkip([]byte(l)); err == nil && s.Reason == crawllog.ReasonOverBudget {
					hosts[strings.SplitN(urlKey(t, s.URL), " ", 2)[0]] = true
				}
			}
		}
	}
	return hosts
}
