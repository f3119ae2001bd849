package frontier

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
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

// TestMovedKeyKeepsRobots: a host of agent a's address moves to agent b's
// mid-crawl; its key goes to b with its robots.txt rules. b fetches no
// robots.txt (one request in all, a's), schedules the key's URLs under
// the rules a had, and fetches none of the paths they disallow.
func TestMovedKeyKeepsRobots(t *testing.T) {
	addrA, addrB := netip.MustParseAddr("10.9.4.1"), netip.MustParseAddr("10.9.4.2")
	res := &movingResolver{m: map[string]netip.Addr{"a.test": addrA}}
	until := make(chan struct{})
	ra := &pairRouter{mine: func(x netip.Addr) bool { return x == addrA }, other: "b"}
	rb := &pairRouter{mine: func(x netip.Addr) bool { return x == addrB }, other: "a"}
	cfg := func(r Router) Config {
		return Config{Settings: Settings{HostDelay: 10 * time.Millisecond, ParallelPerKey: 1}, Resolver: res, Router: r,
			DNSRefresh: time.Millisecond, Until: until}
	}
	ha, hb := newHarness(t, cfg(ra)), newHarness(t, cfg(rb))
	ra.peer, rb.peer = hb.f, ha.f
	rules := robots.Parse([]byte("User-agent: *\nDisallow: /private\n"), "petrel").Rules()
	const pages, private = 12, 3
	for i := 0; i < pages; i++ {
		ha.enqueue(fmt.Sprintf("http://a.test/p%d", i))
	}
	for i := 0; i < private; i++ {
		ha.enqueue(fmt.Sprintf("http://a.test/private/%d", i))
	}
	var mu sync.Mutex
	var log []fetchRecord
	var n int
	answer := func(who string) func(*Task) Outcome {
		return func(tk *Task) Outcome {
			o := Outcome{Task: tk, Result: Fetched, End: time.Now()}
			mu.Lock()
			defer mu.Unlock()
			log = append(log, fetchRecord{url: tk.URL(), key: who, addr: tk.Addr, robots: tk.Robots})
			if tk.Robots {
				o.Robots = rules
			} else if n++; n == 3 {
				res.move("a.test", addrB)
			}
			return o
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, p := range []struct {
		who string
		h   *harness
	}{{"a", ha}, {"b", hb}} {
		ans := answer(p.who)
		wg.Add(2)
		go func() {
			defer wg.Done()
			for tk := range p.h.f.Todo() {
				p.h.f.Done(ans(tk))
			}
		}()
		go func() {
			defer wg.Done()
			if err := p.h.f.Run(ctx); err != nil {
				t.Errorf("frontier %s: %v", p.who, err)
			}
		}()
	}
	denied := func() int64 { return ha.stats.RobotsDenied.Load() + hb.stats.RobotsDenied.Load() }
	for {
		mu.Lock()
		done := n >= pages
		mu.Unlock()
		if done && denied() == private && ha.f.Idle() && hb.f.Idle() {
			break
		}
		if ctx.Err() != nil {
			close(until)
			wg.Wait()
			t.Fatalf("not over within 30 s: %d pages fetched of %d, %d denied of %d", n, pages, denied(), private)
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(until)
	wg.Wait()
	robotsBy, pagesBy := map[string]int{}, map[string]int{}
	for _, r := range log {
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
	if got := hb.stats.RobotsDenied.Load(); got != private {
		t.Errorf("b denied %d URLs under the rules handed over, want %d", got, private)
	}
	if got, taken := ha.stats.HandedOverRobots.Load(), hb.stats.TakenOverRobots.Load(); got != 1 || taken != 1 {
		t.Errorf("rules handed over %d, installed %d; want 1 and 1", got, taken)
	}
	t.Logf("pages by agent %v", pagesBy)
}
