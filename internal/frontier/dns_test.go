package frontier

import (
	"context"
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

// countingResolver is a mapResolver that counts its lookups.
type countingResolver struct {
	m mapResolver
	n atomic.Int64
}

func (r *countingResolver) Lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	r.n.Add(1)
	return r.m.Lookup(ctx, host)
}

// TestDNSForgetsLooseHosts: with the DNS stage holding few host names
// beyond those of visit states, the names of hosts without one (the ip
// policy's hosts, the url policy's forgotten keys) are forgotten and
// resolved again when met again, counted; every URL is still fetched
// once and the IP rule still holds.
func TestDNSForgetsLooseHosts(t *testing.T) {
	const hosts, perHost, addrs, cache = 60, 5, 6, 4
	for _, policy := range []string{"ip", "url"} {
		t.Run(policy, func(t *testing.T) {
			assign, _ := ParseAssign(policy)
			res := &countingResolver{m: mapResolver{}}
			for i := 0; i < hosts; i++ {
				res.m[hostName(i)] = netip.AddrFrom4([4]byte{10, 3, 0, byte(1 + i%addrs)})
			}
			set := Settings{Assign: assign, HostDelay: 4 * time.Millisecond, IPDelay: 4 * time.Millisecond, HostCache: cache}
			h := newHarness(t, Config{Settings: set, Resolver: res})
			for p := 0; p < perHost; p++ {
				for i := 0; i < hosts; i++ {
					h.enqueue(fmt.Sprintf("http://%s/p%d", hostName(i), p))
				}
			}
			if err := h.run(8, nil); err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			for _, u := range h.pages() {
				seen[u]++
			}
			if len(seen) != hosts*perHost {
				t.Errorf("%d URLs fetched, want %d", len(seen), hosts*perHost)
			}
			for u, n := range seen {
				if n != 1 {
					t.Errorf("%s fetched %d times", u, n)
				}
			}
			h.checkGaps(func(r fetchRecord) string { return r.addr.String() }, 4*time.Millisecond)
			if f := h.stats.HostsForgotten.Load(); f == 0 {
				t.Error("no host name forgotten")
			}
			if l, n := h.stats.DNSLookups.Load(), res.n.Load(); l != n || l < hosts {
				t.Errorf("DNSLookups = %d, resolver asked %d times; want equal, and at least the %d hosts", l, n, hosts)
			}
			// The ip policy meets every host again after forgetting it
			// (its records come in rounds, each host's parked until
			// resolved, and no visit state holds the name).
			if l := h.stats.DNSLookups.Load(); policy == "ip" && l <= hosts {
				t.Errorf("DNSLookups = %d: no forgotten host met again", l)
			}
			// Those of visit states, HostCache others, and those the
			// last trims (backing off for a tick when all were busy)
			// left.
			if held := h.stats.HostsHeld.Load(); held > hosts/2 {
				t.Errorf("%d host names held at the end, want ≤ %d", held, hosts/2)
			}
		})
	}
}
