package frontier

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/robots"
)

func TestHandoverRecordRobots(t *testing.T) {
	rec := AppendRecord(nil, Meta{Depth: 1}, "http://a.test/x")
	rules := robots.Parse([]byte("User-agent: *\nDisallow: /private\nCrawl-delay: 2\n"), "petrel").Rules()
	for _, a := range []netip.Addr{netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("2001:db8::1"), {}} {
		ho := Handover{Gen: 9, Addr: a, Robots: &HandedRobots{Rules: rules, Left: 90 * time.Minute}}
		b := AppendHandover(nil, ho, rec)
		got, inner, ok, err := SplitHandover(b)
		if err != nil || !ok || got.Gen != 9 || got.Addr != a || !bytes.Equal(inner, rec) || got.Robots == nil {
			t.Fatalf("%v: split %+v %q %v %v", a, got, inner, ok, err)
		}
		if got.Robots.Rules != rules || got.Robots.Left != 90*time.Minute {
			t.Errorf("%v: rules %+v, want %+v", a, *got.Robots, *ho.Robots)
		}
		for n := 1; n < len(b)-len(rec); n++ {
			if _, _, ok, err := SplitHandover(b[:n]); !ok || err == nil {
				t.Errorf("%v: %d bytes of %d split without an error", a, n, len(b))
			}
		}
	}
	// The format's first form, without a robots section: read as it was.
	old := append([]byte{HandoverTag, 0, 0, 0, 7, 4, 10, 1, 2, 3}, rec...)
	got, inner, ok, err := SplitHandover(old)
	if err != nil || !ok || got.Gen != 7 || got.Addr != netip.MustParseAddr("10.1.2.3") || got.Robots != nil || !bytes.Equal(inner, rec) {
		t.Errorf("old record: %+v %q %v %v", got, inner, ok, err)
	}
	if b := AppendHandover(nil, Handover{Gen: 7, Addr: netip.MustParseAddr("10.1.2.3")}, rec); !bytes.Equal(b, old) {
		t.Errorf("a record without rules is %x, want the first form %x", b, old)
	}
	// A damaged flat form is an error, not rules.
	bad := append([]byte{HandoverTag, 0, 0, 0, 7, RobotsFlag, 1, 3, 0xFF, 0xFF, 0xFF}, rec...)
	if _, _, _, err := SplitHandover(bad); err == nil {
		t.Error("a malformed robots section split without an error")
	}
}

// robotsPair is a crawl of two frontiers, a and b, of one host a.test
// whose robots.txt disallows /private: a holds its key first and is given
// pages URLs, then private ones; move is called once a has fetched three
// pages, to move the key to b.
type robotsPair struct {
	ha, hb        *harness
	pages, denied int // of the URLs given: allowed ones, disallowed ones
	mu            sync.Mutex
	log           []fetchRecord
	fetched       int
	until         chan struct{} // both frontiers' Until
}

func newRobotsPair(t *testing.T, mineA, mineB func(netip.Addr) bool, res Resolver, refresh time.Duration) *robotsPair {
	ra := &pairRouter{mine: mineA, other: "b"}
	rb := &pairRouter{mine: mineB, other: "a"}
	until := make(chan struct{})
	cfg := func(r Router) Config {
		return Config{Settings: Settings{HostDelay: 10 * time.Millisecond, ParallelPerKey: 1}, Resolver: res, Router: r,
			DNSRefresh: refresh, Until: until}
	}
	p := &robotsPair{ha: newHarness(t, cfg(ra)), hb: newHarness(t, cfg(rb)), pages: 12, denied: 3, until: until}
	ra.peer, rb.peer = p.hb.f, p.ha.f
	for i := 0; i < p.pages; i++ {
		p.ha.enqueue(fmt.Sprintf("http://a.test/p%d", i))
	}
	for i := 0; i < p.denied; i++ {
		p.ha.enqueue(fmt.Sprintf("http://a.test/private/%d", i))
	}
	return p
}

// run crawls until every URL is fetched or denied, and checks that b
// fetched no robots.txt and obeyed the rules a handed over.
func (p *robotsPair) run(t *testing.T, move func()) {
	rules := robots.Parse([]byte("User-agent: *\nDisallow: /private\n"), "petrel").Rules()
	answer := func(who string) func(*Task) Outcome {
		return func(tk *Task) Outcome {
			o := Outcome{Task: tk, Result: Fetched, End: time.Now()}
			p.mu.Lock()
			defer p.mu.Unlock()
			p.log = append(p.log, fetchRecord{url: tk.URL(), key: who, addr: tk.Addr, robots: tk.Robots})
			if tk.Robots {
				o.Robots = rules
			} else if p.fetched++; p.fetched == 3 {
				move()
			}
			return o
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, x := range []struct {
		who string
		h   *harness
	}{{"a", p.ha}, {"b", p.hb}} {
		ans := answer(x.who)
		wg.Add(2)
		go func() {
			defer wg.Done()
			for tk := range x.h.f.Todo() {
				x.h.f.Done(ans(tk))
			}
		}()
		go func() {
			defer wg.Done()
			if err := x.h.f.Run(ctx); err != nil {
				t.Errorf("frontier %s: %v", x.who, err)
			}
		}()
	}
	denied := func() int64 { return p.ha.stats.RobotsDenied.Load() + p.hb.stats.RobotsDenied.Load() }
	stop := func() { close(p.until); wg.Wait() }
	for {
		p.mu.Lock()
		n := p.fetched
		p.mu.Unlock()
		if n >= p.pages && denied() == int64(p.denied) && p.ha.f.Idle() && p.hb.f.Idle() {
			break
		}
		if ctx.Err() != nil {
			stop()
			t.Fatalf("not over within 30 s: %d pages fetched of %d, %d denied of %d", n, p.pages, denied(), p.denied)
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	p.check(t)
}

func (p *robotsPair) check(t *testing.T) {
	robotsBy, pagesBy := map[string]int{}, map[string]int{}
	for _, r := range p.log {
		switch {
		case r.robots:
			robotsBy[r.key]++
		case strings.Contains(r.url, "/private"):
			t.Errorf("%s, disallowed, fetched by %s", r.url, r.key)
		default:
			pagesBy[r.key]++
		}
	}
	if robotsBy["a"] != 1 || robotsBy["b"] != 0 {
		t.Errorf("robots.txt requests by agent %v, want one by a and none by b", robotsBy)
	}
	if pagesBy["b"] == 0 {
		t.Fatalf("pages by agent %v: the key never moved to b", pagesBy)
	}
	if got := p.hb.stats.RobotsDenied.Load(); got != int64(p.denied) {
		t.Errorf("b denied %d URLs under the rules handed over, want %d", got, p.denied)
	}
	if got, taken := p.ha.stats.HandedOverRobots.Load(), p.hb.stats.TakenOverRobots.Load(); got != 1 || taken != 1 {
		t.Errorf("rules handed over %d, installed %d; want 1 and 1", got, taken)
	}
	t.Logf("pages by agent %v", pagesBy)
}

// TestMovedKeyKeepsRobots: a host of agent a's address moves to agent b's
// mid-crawl; its key goes to b with its robots.txt rules. b fetches no
// robots.txt (one request in all, a's), schedules the key's URLs under
// the rules a had, and fetches none of the paths they disallow.
func TestMovedKeyKeepsRobots(t *testing.T) {
	addrA, addrB := netip.MustParseAddr("10.9.4.1"), netip.MustParseAddr("10.9.4.2")
	res := &movingResolver{m: map[string]netip.Addr{"a.test": addrA}}
	p := newRobotsPair(t, func(x netip.Addr) bool { return x == addrA }, func(x netip.Addr) bool { return x == addrB }, res, time.Millisecond)
	p.run(t, func() { res.move("a.test", addrB) })
}

// TestViewChangeKeepsRobots: a view change gives a's address to b; a's
// MoveOut hands the key over with its robots.txt rules while b holds the
// address until the release: b fetches no robots.txt and obeys the rules.
func TestViewChangeKeepsRobots(t *testing.T) {
	addrA := netip.MustParseAddr("10.9.5.1")
	var moved atomic.Bool
	res := &movingResolver{m: map[string]netip.Addr{"a.test": addrA}}
	p := newRobotsPair(t, func(x netip.Addr) bool { return x == addrA && !moved.Load() },
		func(x netip.Addr) bool { return x == addrA && moved.Load() }, res, 0)
	var wg sync.WaitGroup
	defer wg.Wait()
	p.run(t, func() {
		wg.Add(1)
		go func() { // the agents' steps of a view change
			defer wg.Done()
			ctx := context.Background()
			id, err := p.hb.f.HoldAddrs(ctx, func(x netip.Addr) bool { return x == addrA })
			if err != nil {
				t.Error(err)
				return
			}
			moved.Store(true)
			for {
				inFlight, waits, err := p.ha.f.MoveOut(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if inFlight == 0 {
					if err := p.hb.f.ReleaseAddrs(ctx, id, waits); err != nil {
						t.Error(err)
					}
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
	})
}
