package frontier

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// movingResolver is a mapResolver whose answers can change.
type movingResolver struct {
	mu sync.Mutex
	m  map[string]netip.Addr
}

func (r *movingResolver) Lookup(_ context.Context, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a, ok := r.m[host]; ok {
		return []netip.Addr{a}, nil
	}
	return nil, noSuchHost(host)
}

func (r *movingResolver) move(host string, a netip.Addr) {
	r.mu.Lock()
	r.m[host] = a
	r.mu.Unlock()
}

// TestAddressChangeMovesKey: a host whose name, resolved again, has
// another address is fetched from the new address from then on, its
// host delay kept across the move, and the IP delay kept on both
// addresses (the new one shared with other hosts).
func TestAddressChangeMovesKey(t *testing.T) {
	const hostDelay, ipDelay = 30 * time.Millisecond, 12 * time.Millisecond
	oldAddr, newAddr := netip.MustParseAddr("10.9.0.1"), netip.MustParseAddr("10.9.0.2")
	// b, c and d keep the new address busy: its IP delay, not their host
	// delay, paces them, so a.test counted on the old entry would show.
	res := &movingResolver{m: map[string]netip.Addr{"a.test": oldAddr, "b.test": newAddr, "c.test": newAddr, "d.test": newAddr}}
	h := newHarness(t, Config{Settings: Settings{HostDelay: hostDelay, IPDelay: ipDelay}, Resolver: res,
		DNSRefresh: 5 * time.Millisecond})
	const pages = 12
	for i := 0; i < pages; i++ {
		h.enqueue(fmt.Sprintf("http://a.test/p%d", i))
		for _, o := range []string{"b", "c", "d"} {
			h.enqueue(fmt.Sprintf("http://%s.test/p%d", o, i))
		}
	}
	var mu sync.Mutex
	aPages := 0
	err := h.run(3, func(t *Task) Outcome {
		time.Sleep(2 * time.Millisecond)
		if t.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{}}
		}
		if strings.HasPrefix(t.URL(), "http://a.test/") {
			mu.Lock()
			if aPages++; aPages == 4 {
				res.move("a.test", newAddr)
			}
			mu.Unlock()
		}
		return Outcome{Result: Fetched}
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(h.pages()); n != 4*pages {
		t.Fatalf("fetched %d pages, want %d", n, 4*pages)
	}
	// a.test: the old address until the move, the new one after it, never
	// back.
	moved, atNew := false, 0
	for _, r := range h.log {
		if !strings.HasPrefix(r.url, "http://a.test/") {
			continue
		}
		switch {
		case r.addr == newAddr:
			moved = true
			atNew++
		case moved:
			t.Errorf("%s fetched from the old address %s after a fetch from the new one", r.url, r.addr)
		}
	}
	if atNew < pages-6 {
		t.Errorf("%d requests to a.test at its new address, want most of the %d after the move", atNew, pages-4)
	}
	if got := h.stats.AddressChanges.Load(); got != 1 {
		t.Errorf("AddressChanges = %d, want 1", got)
	}
	// The key's visit state moved to the new address's workbench entry
	// (the old one no longer carries its requests).
	for _, v := range h.f.sched.states {
		if v.host.name == "a.test" && (v.entry == nil || v.entry.addr != newAddr) {
			t.Errorf("a.test's visit state is attached to %v, want the entry of %s", v.entry, newAddr)
		}
	}
	h.checkGaps(func(r fetchRecord) string { return r.key }, hostDelay)
	h.checkGaps(func(r fetchRecord) string { return r.addr.String() }, ipDelay)
}
