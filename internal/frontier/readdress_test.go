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

// timedReady is a readySplit that notes when each ready URL was handed
// over.
type timedReady struct {
	readySplit
	at []time.Time
}

func (r *timedReady) ForwardReady(to Peer, rec []byte) error {
	r.mu.Lock()
	r.at = append(r.at, time.Now())
	r.mu.Unlock()
	return r.readySplit.ForwardReady(to, rec)
}

// TestAddressChangeToAnotherAgent: a host whose name, resolved again,
// has an address another agent owns is handed to that agent: its queued
// URLs go there as ready URLs, not before the key's delay since the last
// request here has run out and with nothing of it in flight, and nothing
// more of it is fetched here. (The frontier's side of a key moving
// between agents with its address; the sieve owner's routing of the
// key's next URLs is the agent's.)
func TestAddressChangeToAnotherAgent(t *testing.T) {
	const hostDelay = 80 * time.Millisecond
	oldAddr, newAddr := netip.MustParseAddr("10.9.1.1"), netip.MustParseAddr("10.9.1.2")
	res := &movingResolver{m: map[string]netip.Addr{"a.test": oldAddr}}
	r := &timedReady{readySplit: readySplit{splitRouter: splitRouter{mine: "", addr: func(a netip.Addr) Peer {
		if a == newAddr {
			return "b"
		}
		return Self
	}}}}
	h := newHarness(t, Config{Settings: Settings{HostDelay: hostDelay, ParallelPerKey: 1}, Resolver: res, Router: r,
		DNSRefresh: time.Millisecond})
	const pages = 8
	for i := 0; i < pages; i++ {
		h.enqueue(fmt.Sprintf("http://a.test/p%d", i))
	}
	var mu sync.Mutex
	n := 0
	err := h.run(2, func(t *Task) Outcome {
		if t.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{}}
		}
		mu.Lock()
		if n++; n == 3 {
			res.move("a.test", newAddr)
		}
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		return Outcome{Result: Fetched}
	})
	if err != nil {
		t.Fatal(err)
	}
	var lastEnd time.Time
	for _, rec := range h.log {
		if rec.addr != oldAddr {
			t.Errorf("%s fetched from %s here", rec.url, rec.addr)
		}
		if rec.end.After(lastEnd) {
			lastEnd = rec.end
		}
	}
	got := len(h.pages())
	if got < 3 || got+len(r.ready) != pages {
		t.Fatalf("fetched %d here and handed over %d, want at least 3 and %d in all", got, len(r.ready), pages)
	}
	seen := map[string]bool{}
	for _, p := range h.pages() {
		seen[p] = true
	}
	for i, rec := range r.ready {
		u := string(rec[MetaLen:])
		if !strings.HasPrefix(u, "http://a.test/p") || seen[u] {
			t.Errorf("handed over %q (fetched here: %v)", u, seen[u])
		}
		seen[u] = true
		if gap := r.at[i].Sub(lastEnd); gap < hostDelay {
			t.Errorf("%s handed over %v after the last request here ended, within the host delay %v", u, gap, hostDelay)
		}
	}
	if got := h.stats.HandedOverKeys.Load(); got != 1 {
		t.Errorf("HandedOverKeys = %d, want 1", got)
	}
}
