package frontier

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestHandoverRecord(t *testing.T) {
	rec := AppendRecord(nil, Meta{Depth: 3, Seed: 2}, "http://a.test/x")
	for _, a := range []netip.Addr{netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("::ffff:10.1.2.3"), {}} {
		ho := Handover{Gen: 70000, Addr: a}
		b := AppendHandover(nil, ho, rec)
		got, inner, ok, err := SplitHandover(b)
		if err != nil || !ok || got.Gen != ho.Gen || got.Addr != a.Unmap() || !bytes.Equal(inner, rec) {
			t.Errorf("%v: split %v %q %v %v", a, got, inner, ok, err)
		}
		if !bytes.Equal(ReadyRecord(b), rec) {
			t.Errorf("%v: ReadyRecord %q", a, ReadyRecord(b))
		}
		for n := 1; n < 6+len(a.Unmap().AsSlice()); n++ {
			if _, _, ok, err := SplitHandover(b[:n]); !ok || err == nil {
				t.Errorf("%v: %d bytes of %d split without an error", a, n, len(b))
			}
		}
	}
	if _, inner, ok, err := SplitHandover(rec); ok || err != nil || !bytes.Equal(inner, rec) {
		t.Errorf("an ordinary record split as a hand-over: %q %v %v", inner, ok, err)
	}
}

// pairRouter is the router of one of two frontiers of a test crawl: it
// owns the addresses mine selects, and its ready URLs for the other's go
// to the other frontier's AcceptReady, as the exchange would deliver them.
type pairRouter struct {
	mine  func(netip.Addr) bool
	other Peer
	peer  *Frontier

	mu   sync.Mutex
	sent []Handover
}

func (r *pairRouter) OwnerOf([]byte) Peer             { return Self }
func (r *pairRouter) Forward(to Peer, _ []byte) error { return fmt.Errorf("forward to %q", to) }
func (r *pairRouter) ReadyOwner([]byte) Peer          { return Self }
func (r *pairRouter) AddrOwner(a netip.Addr) Peer {
	return map[bool]Peer{true: Self, false: r.other}[r.mine(a)]
}
func (r *pairRouter) handovers() []Handover { r.mu.Lock(); defer r.mu.Unlock(); return r.sent }
func (r *pairRouter) ForwardReady(to Peer, b []byte) error {
	if to != r.other {
		return fmt.Errorf("ready URL for %q", to)
	}
	ho, _, ok, err := SplitHandover(b)
	if err != nil || !ok {
		return fmt.Errorf("a moved key's record is not a hand-over record (%v)", err)
	}
	r.mu.Lock()
	r.sent = append(r.sent, ho)
	r.mu.Unlock()
	return r.peer.AcceptReady(b)
}

// TestHostMovesThereAndBack: two agents, each owning one address; a host
// of agent a's address moves to agent b's mid-crawl, then back. The key
// goes to b with its queued URLs and every URL a's sieve finds for it
// later (a stays the one place its URLs pass through), then back to a,
// which takes it (the hand-over's newer generation) rather than sending it
// to b again: every page once, the host delay held across both agents'
// requests, and two hand-overs in all.
func TestHostMovesThereAndBack(t *testing.T) {
	const hostDelay = 20 * time.Millisecond
	addrA, addrB := netip.MustParseAddr("10.9.2.1"), netip.MustParseAddr("10.9.2.2")
	res := &movingResolver{m: map[string]netip.Addr{"a.test": addrA}}
	until := make(chan struct{})
	ra := &pairRouter{mine: func(x netip.Addr) bool { return x == addrA }, other: "b"}
	rb := &pairRouter{mine: func(x netip.Addr) bool { return x == addrB }, other: "a"}
	cfg := func(r Router) Config {
		return Config{Settings: Settings{HostDelay: hostDelay, ParallelPerKey: 1}, Resolver: res, Router: r,
			DNSRefresh: time.Millisecond, Until: until}
	}
	ha, hb := newHarness(t, cfg(ra)), newHarness(t, cfg(rb))
	ra.peer, rb.peer = hb.f, ha.f
	const first = 12
	for i := 0; i < first; i++ {
		ha.enqueue(fmt.Sprintf("http://a.test/p%d", i))
	}
	var mu sync.Mutex
	var log []fetchRecord
	var pages, found int
	var errs []error
	answer := func(who string, h *harness) func(*Task) Outcome {
		return func(tk *Task) Outcome {
			start := time.Now()
			time.Sleep(2 * time.Millisecond)
			o := Outcome{Task: tk, Result: Fetched, End: time.Now()}
			if tk.Robots {
				o.Robots = allowAll{}
			}
			mu.Lock()
			defer mu.Unlock()
			log = append(log, fetchRecord{url: tk.URL(), key: who, addr: tk.Addr, robots: tk.Robots, start: start, end: o.End})
			if tk.Robots {
				return o
			}
			switch pages++; pages {
			case 3:
				res.move("a.test", addrB)
			case 8:
				res.move("a.test", addrA)
			}
			if pages%3 == 0 {
				// a link found: a's sieve (the key's owner) places it with
				// a, which first placed the host.
				found++
				if err := ha.f.Enqueue(mustURL(t, fmt.Sprintf("http://a.test/found%d", found)), Meta{}); err != nil {
					errs = append(errs, err)
				}
			}
			return o
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	runErrs := make([]error, 2)
	for i, p := range []struct {
		who string
		h   *harness
	}{{"a", ha}, {"b", hb}} {
		ans := answer(p.who, p.h)
		for j := 0; j < 2; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for tk := range p.h.f.Todo() {
					p.h.f.Done(ans(tk))
				}
			}()
		}
		wg.Add(1)
		go func() { defer wg.Done(); runErrs[i] = p.h.f.Run(ctx) }()
	}
	for {
		mu.Lock()
		n, want := pages, first+found
		mu.Unlock()
		if n >= want && ha.f.Idle() && hb.f.Idle() {
			break
		}
		if ctx.Err() != nil {
			close(until)
			wg.Wait()
			t.Fatalf("not over within 30 s: %d pages fetched of %d; hand-overs a→b %d, b→a %d (a key passed back and forth?)",
				n, want, len(ra.handovers()), len(rb.handovers()))
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(until)
	wg.Wait()
	for i, err := range runErrs {
		if err != nil {
			t.Errorf("frontier %d: %v", i, err)
		}
	}
	for _, err := range errs {
		t.Error(err)
	}
	seen := map[string]int{}
	who := map[string]int{}
	for _, r := range log {
		if !r.robots {
			seen[r.url]++
			who[r.key]++
		}
		if want := map[string]netip.Addr{"a": addrA, "b": addrB}[r.key]; r.addr != want {
			t.Errorf("%s fetched by %s from %s", r.url, r.key, r.addr)
		}
	}
	if len(seen) != first+found {
		t.Errorf("%d pages fetched, want %d", len(seen), first+found)
	}
	for u, n := range seen {
		if n != 1 {
			t.Errorf("%s fetched %d times", u, n)
		}
	}
	// a fetched before and after b; the key went each way once.
	sort.Slice(log, func(i, j int) bool { return log[i].start.Before(log[j].start) })
	var order []string
	for _, r := range log {
		if len(order) == 0 || order[len(order)-1] != r.key {
			order = append(order, r.key)
		}
	}
	if strings.Join(order, "") != "aba" {
		t.Errorf("the host's requests by agent in time order: %v, want a, then b, then a", order)
	}
	for i := 1; i < len(log); i++ {
		if gap := log[i].start.Sub(log[i-1].end); gap < hostDelay {
			t.Errorf("%s (by %s) started %v after the end of %s (by %s), want ≥ %v", log[i].url, log[i].key, gap, log[i-1].url, log[i-1].key, hostDelay)
		}
	}
	if got := ha.stats.HandedOverKeys.Load() + hb.stats.HandedOverKeys.Load(); got != 2 {
		t.Errorf("HandedOverKeys = %d, want 2 (there and back)", got)
	}
	for _, ho := range ra.handovers() {
		if ho.Gen != 1 || ho.Addr != addrB {
			t.Errorf("a handed over %+v, want generation 1 at %s", ho, addrB)
		}
	}
	for _, ho := range rb.handovers() {
		if ho.Gen != 2 || ho.Addr != addrA {
			t.Errorf("b handed back %+v, want generation 2 at %s", ho, addrA)
		}
	}
	t.Logf("pages by agent %v; records handed a→b %d, b→a %d", who, len(ra.handovers()), len(rb.handovers()))
}

// TestStaleHandover: a hand-over record makes the receiver the key's
// holder at the address it carries (not the receiver's own resolution);
// one of a generation the receiver has seen comes from an agent that no
// longer holds the key, and is an ordinary record: fetched here, where
// the key is, not handed on by its address.
func TestStaleHandover(t *testing.T) {
	addrA, addrB := netip.MustParseAddr("10.9.3.1"), netip.MustParseAddr("10.9.3.2")
	res := &movingResolver{m: map[string]netip.Addr{"a.test": addrB}}
	r := &readySplit{splitRouter: splitRouter{mine: "", addr: func(x netip.Addr) Peer {
		if x == addrB {
			return "b"
		}
		return Self
	}}}
	h := newHarness(t, Config{Resolver: res, Router: r})
	ho := func(gen uint32, a netip.Addr, u string) []byte {
		return AppendHandover(nil, Handover{Gen: gen, Addr: a}, AppendRecord(nil, Meta{}, u))
	}
	// Generation 3 here at addrA, then a record of generation 2 (an older
	// holder's) naming addrB.
	for _, rec := range [][]byte{ho(3, addrA, "http://a.test/1"), ho(2, addrB, "http://a.test/2")} {
		if err := h.f.AcceptReady(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.run(1, nil); err != nil {
		t.Fatal(err)
	}
	if p := h.pages(); len(p) != 2 || len(r.ready) != 0 {
		t.Fatalf("fetched %v, forwarded %d; want both fetched here", p, len(r.ready))
	}
	for _, rec := range h.log {
		if rec.addr != addrA {
			t.Errorf("%s fetched from %s, want the address handed over with it (%s), not the resolver's", rec.url, rec.addr, addrA)
		}
	}
}
