package e2e

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// TestCrawlHostMovesAddress moves a host to another address of the web
// mid-crawl (its name server answers the new address; the old server keeps
// serving it, as in a migration): with --dns-refresh the crawler fetches
// it from the new address once it has resolved the name again and never
// from the old one after that, every page once, and the server's log shows
// the host delay kept across the move and the IP delay on both addresses
// (the new one shared with the host living there).
func TestCrawlHostMovesAddress(t *testing.T) {
	const hostDelay, ipDelay = 60 * time.Millisecond, 40 * time.Millisecond
	port := 20000 + rand.IntN(10000)
	r := startWeb(t, testweb.Config{Hosts: 3, HostsPerIP: 1, PagesPerHost: 30, Seed: 31, Port: port,
		FirstIP: netip.MustParseAddr("127.61.5.1")})
	dns, err := r.web.ListenDNS("127.61.5.250:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dns.Close()
	mover, there := twoHosts(t, r)
	from, _ := r.web.AddrOf(mover)
	to, _ := r.web.AddrOf(there)
	done := make(chan error, 1)
	go func() {
		done <- r.crawl(t, 90*time.Second, "--system-dns=true", "--hosts", "", "--dns-server", dns.Addr(),
			"--dns-refresh", "100ms", "--host-delay", hostDelay.String(), "--ip-delay", ipDelay.String())
	}()
	deadline := time.Now().Add(30 * time.Second)
	for moverHits(r, mover) < 8 {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than 8 requests to %s within 30s", mover)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := r.web.MoveHost(mover, to); err != nil {
		t.Fatal(err)
	}
	moved := time.Now()
	if err := <-done; err != nil {
		t.Fatalf("crawl: %v\n%s", err, r.stderr.String())
	}
	t.Logf("address changes seen by the crawler: %d; DNS queries %d", readStats(t, r.dir)["AddressChanges"], dns.Queries())
	hits := r.web.Hits()
	seen := map[string]int{}
	atNew, lateOld := 0, 0
	var firstNew time.Time
	for _, h := range hits {
		if h.Path != "/robots.txt" {
			seen[key(h.Host, h.Path)]++
		}
		if h.Host != mover {
			continue
		}
		switch {
		case h.IP == to:
			atNew++
			if firstNew.IsZero() || h.Start.Before(firstNew) {
				firstNew = h.Start
			}
		case h.Start.After(moved.Add(time.Second)):
			lateOld++ // the name was resolved again every 100 ms
		}
	}
	for _, h := range hits {
		if h.Host == mover && h.IP == from && !firstNew.IsZero() && h.Start.After(firstNew) {
			t.Errorf("%s%s requested at the old address %s after a request at the new one", mover, h.Path, from)
		}
	}
	if atNew < 5 || lateOld > 0 {
		t.Errorf("%s: %d requests at the new address, %d at the old one more than a second after the move", mover, atNew, lateOld)
	}
	for _, u := range r.web.Expected() {
		if n := seen[urlKey(t, u)]; n != 1 {
			t.Errorf("expected URL %s fetched %d times", u, n)
		}
	}
	t.Logf("%s moved from %s to %s (%s's address) after 8 requests; %d requests there", mover, from, to, there, atNew)
	checkPolitenessWithin(t, hits, hostDelay, ipDelay, 0)
}

// twoHosts returns two normal hosts of the web on different addresses.
func twoHosts(t *testing.T, r *crawlRun) (string, string) {
	t.Helper()
	var names []string
	for _, seed := range r.web.Expected() {
		u, err := urlx.Parse(seed)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, u.Hostname())
	}
	for _, a := range names {
		for _, b := range names {
			aa, _ := r.web.AddrOf(a)
			ba, _ := r.web.AddrOf(b)
			if aa != ba {
				return a, b
			}
		}
	}
	t.Fatal("the web has no two hosts on different addresses")
	return "", ""
}

func moverHits(r *crawlRun, host string) int {
	n := 0
	for _, h := range r.web.Hits() {
		if h.Host == host {
			n++
		}
	}
	return n
}
