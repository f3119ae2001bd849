package e2e

import (
	"math/rand/v2"
	"net/netip"
	"sort"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestClusterHostMovesAddress: three agents with --dns-refresh; mid-crawl
// a host on an address agent A owns moves to an address agent B owns,
// and its key's sieve owner is a third agent where the web allows it.
// The sieve owner goes on placing the host's new URLs with A (the address
// it first placed the host at); A, once it resolves the new address,
// hands the key to B with its queued URLs when its delay has run out and
// forwards the later ones: every page fetched once, the host fetched by A
// at its old address and by B at its new one and never by both at once
// (the web's log: the host delay between every two requests to it, the
// IP delay on both addresses), each address dialled by one agent, and
// the host's robots.txt fetched once in all (its rules go to B with the
// key, judge's bound of one per start).
func TestClusterHostMovesAddress(t *testing.T) {
	t.Parallel() // waits more than it computes: see the package doc
	const hostDelay, ipDelay = 60 * time.Millisecond, 30 * time.Millisecond
	web := startWeb(t, testweb.Config{Hosts: 9, HostsPerIP: 1, PagesPerHost: 24, Seed: 47, Port: 20000 + rand.IntN(10000),
		FirstIP: netip.MustParseAddr("127.67.0.1")})
	dns, err := web.web.ListenDNS("127.67.0.250:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dns.Close()
	names := []string{"agent1", "agent2", "agent3"}
	v := viewOf(t, names...)
	mover, to := pickMove(t, v, hostsByIP(t, web.hosts))
	from, _ := web.web.AddrOf(mover)
	holder, next := v.Owner(ipGroup(from)), v.Owner(ipGroup(to))
	c := newClusterRun(t, web, "127.217.0.1", len(names))
	for _, a := range c.agents {
		c.start(t, a, append(c.flags(hostDelay, ipDelay), "--cluster-wait", "3", "--system-dns=true", "--hosts", "",
			"--dns-server", dns.Addr(), "--dns-refresh", "100ms")...)
	}
	deadline := time.Now().Add(30 * time.Second)
	for moverHits(web, mover) < 8 {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than 8 requests to %s within 30s", mover)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := web.web.MoveHost(mover, to); err != nil {
		t.Fatal(err)
	}
	moved := time.Now()
	errs := c.wait(t, 60*time.Second)
	for _, a := range c.agents {
		if errs[a.name] != nil {
			t.Errorf("agent %s: %v\n%s", a.name, errs[a.name], a.stderr.String())
		}
	}
	var hits []testweb.Hit
	for _, h := range web.web.Hits() {
		if h.Host == mover {
			hits = append(hits, h)
		}
	}
	sort.Slice(hits, func(i, j int) bool { return hits[i].Start.Before(hits[j].Start) })
	atOld, atNew := 0, 0
	var switchGap time.Duration
	for i, h := range hits {
		switch h.IP {
		case from:
			atOld++
			if atNew > 0 {
				t.Errorf("%s%s requested at the old address %s after a request at the new one", mover, h.Path, from)
			}
		case to:
			if atNew++; atNew == 1 && i > 0 {
				switchGap = h.Start.Sub(hits[i-1].End)
			}
		default:
			t.Errorf("%s%s requested at %s", mover, h.Path, h.IP)
		}
	}
	if atNew < 5 || atOld < 8 {
		t.Errorf("%s: %d requests at its old address, %d at the new one; want the move mid-crawl", mover, atOld, atNew)
	}
	st := map[string]map[string]int64{}
	for _, a := range c.agents {
		st[a.name] = readStats(t, a.dir)
	}
	t.Logf("%s (sieve owner %s) moved %v after 8 requests from %s (%s) to %s (%s): %d requests before, %d after; "+
		"%v from the last request at the old address to the first at the new; address changes seen %d/%d/%d, keys handed over %d/%d/%d",
		mover, v.Owner(mover), time.Since(moved).Round(time.Millisecond), from, holder, to, next, atOld, atNew, switchGap,
		st["agent1"]["AddressChanges"], st["agent2"]["AddressChanges"], st["agent3"]["AddressChanges"],
		st["agent1"]["HandedOverKeys"], st["agent2"]["HandedOverKeys"], st["agent3"]["HandedOverKeys"])
	if got := st[holder]["HandedOverRobots"]; got < 1 {
		t.Errorf("%s handed over the rules of %d authorities, want the moved host's", holder, got)
	}
	if got := st[next]["TakenOverRobots"]; got < 1 {
		t.Errorf("%s installed %d authorities' handed-over rules, want the moved host's", next, got)
	}
	c.judge(t, hostDelay, ipDelay, 1)
}

// pickMove returns a host of the web and another address of it, owned by
// another agent than the host's; by preference a host whose sieve owner
// is a third agent, then one whose sieve owner is not its address's.
func pickMove(t *testing.T, v *cluster.View, byIP map[netip.Addr][]string) (string, netip.Addr) {
	t.Helper()
	var ips []netip.Addr
	for ip := range byIP {
		ips = append(ips, ip)
	}
	sort.Slice(ips, func(i, j int) bool { return ips[i].Less(ips[j]) })
	best, bestTo, score := "", netip.Addr{}, -1
	for _, from := range ips {
		a := v.Owner(ipGroup(from))
		for _, h := range byIP[from] {
			for _, to := range ips {
				b := v.Owner(ipGroup(to))
				if b == a {
					continue
				}
				s := 0
				if o := v.Owner(h); o != a {
					s++
					if o != b {
						s++
					}
				}
				if s > score {
					best, bestTo, score = h, to, s
				}
			}
		}
	}
	if best == "" {
		t.Fatal("the web has no two addresses owned by different agents")
	}
	return best, bestTo
}

func ipGroup(a netip.Addr) string { return "ip:" + a.String() }
