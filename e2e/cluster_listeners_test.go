package e2e

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/coord"
	"github.com/petrel-crawler/petrel/internal/netcap/netcaptest"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestClusterListenersRefusePastTheirCaps: while a crawl of two agents
// runs, the coordinating agent's exchange, etcd client port and etcd
// peer port are each given their cap of idle connections and more; the
// ones past a cap are closed at once and logged, and the crawl ends with
// every page fetched once.
func TestClusterListenersRefusePastTheirCaps(t *testing.T) {
	t.Parallel() // waits more than it computes: see the package doc
	const hostDelay, ipDelay = 100 * time.Millisecond, 50 * time.Millisecond
	web := startWeb(t, testweb.Config{Hosts: 6, HostsPerIP: 2, PagesPerHost: 60, Seed: 29,
		FirstIP: netip.MustParseAddr("127.61.40.1")})
	c := newClusterRun(t, web, "127.213.40.1", 2)
	for _, a := range c.agents {
		c.start(t, a, append(c.flags(hostDelay, ipDelay), "--cluster-wait", "2")...)
	}
	a := c.agents[0]
	a.waitFor(t, "view epoch ", 30*time.Second)
	bind := netip.MustParseAddrPort(a.bind)
	co := coord.AgentCoordinator(a.name, bind)
	const extra = 20
	for _, l := range []struct {
		addr string
		max  int
	}{
		{netip.AddrPortFrom(bind.Addr(), bind.Port()+1).String(), cluster.MaxExchangeConns},
		{co.Client.String(), coord.MaxClientConns},
		{co.Peer().String(), coord.MaxPeerConns},
	} {
		// The agents' own connections hold a few places: cap idle ones
		// fill it whatever they are, and the last ones are past it.
		flood := netcaptest.Flood(t, l.addr, l.max+extra)
		netcaptest.Refused(t, flood[len(flood)-extra:])
	}
	if strings.Contains(a.stderr.String(), "crawl finished") {
		t.Fatal("the crawl ended before the flood: make the web larger")
	}
	errs := c.wait(t, 90*time.Second)
	for _, a := range c.agents {
		if errs[a.name] != nil {
			t.Errorf("agent %s: %v\n%s", a.name, errs[a.name], a.stderr.String())
		}
	}
	c.checkFetches(t, web.web.Hits(), true)
	events, err := os.ReadFile(filepath.Join(a.dir, "logs", "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cluster: exchange", "coord: etcd client port", "coord: etcd peer port"} {
		if !strings.Contains(string(events), name+": refused a connection: too many connections open") {
			t.Errorf("%s: no refusal logged in %s's events.jsonl", name, a.name)
		}
	}
}
