package frontier

import (
	"fmt"
	"math"
	"net/netip"
	"testing"
	"time"
)

// Tests of the scheduler's wait arithmetic: a delay too long for the clock
// saturates instead of wrapping, and a lowered delay shortens the waits
// already scheduled.

// reconfigureAfter has m check the queued counts after every step and, once
// logged fetches have ended, run before (nil: nothing) and reconfigure
// the scheduler with change applied to its settings, once.
func (m *sim) reconfigureAfter(logged int, before func(), change func(*liveSettings)) {
	done := false
	m.check = func() {
		if err := m.s.checkQueued(); err != nil {
			m.t.Fatal(err)
		}
		if done || len(m.log) != logged {
			return
		}
		done = true
		if before != nil {
			before()
		}
		set := *m.s.set
		change(&set)
		m.s.reconfigure(&set)
	}
}

func TestLaterSaturates(t *testing.T) {
	for _, c := range []struct {
		t    int64
		d    time.Duration
		want int64
	}{
		{5, 7, 12},
		{5, -7, -2},
		{int64(49 * time.Minute), 2562047 * time.Hour, math.MaxInt64}, // wraps negative unsaturated
		{math.MaxInt64 - 3, 3, math.MaxInt64},
		{math.MaxInt64 - 3, 4, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{math.MinInt64 + 3, -4, math.MinInt64},
		{math.MaxInt64, -10, math.MaxInt64 - 10},
	} {
		if got := later(c.t, c.d); got != c.want {
			t.Errorf("later(%d, %d) = %d, want %d", c.t, int64(c.d), got, c.want)
		}
	}
}

// TestSimHugeDelayDoesNotWrap: a host delay of 2562047h on a crawl running
// for 49 minutes pushes the key's next request to the end of the clock, not
// to a time already past (the end of the robots.txt fetch plus the delay
// overflowed int64, and the page was fetched at once); lowering the delay
// to 200ms then brings the page 200ms after the robots.txt.
func TestSimHugeDelayDoesNotWrap(t *testing.T) {
	m := newSim(t, Config{Settings: Settings{HostDelay: 2562047 * time.Hour, IPDelay: 100 * time.Millisecond}},
		map[string]netip.Addr{"a.test": netip.MustParseAddr("10.9.8.1")})
	m.clock.Advance(49 * time.Minute)
	m.add("http://a.test/p", Meta{})
	m.reconfigureAfter(1, func() { // robots.txt released
		v := m.s.states["http://a.test"]
		if left := time.Duration(v.nextFetch - m.f.now()); v.nextFetch != math.MaxInt64 {
			t.Fatalf("next fetch %v from now, want the end of the clock", left)
		}
	}, func(set *liveSettings) { set.HostDelay = 200 * time.Millisecond })
	m.run(fetched(10*time.Millisecond), 100)
	if gs := m.gaps(simKey)["http://a.test"]; len(gs) != 1 || gs[0] != 200*time.Millisecond {
		t.Fatalf("gap after robots.txt %v, want the new delay", gs)
	}
}

// TestSimLoweredDelayShortensWaits: a key and its address wait out a long
// host and IP delay; lowering both shortens the waits already scheduled,
// for a key with work and for a key gone idle alike, to the end of the
// last exchange plus the new delays.
func TestSimLoweredDelayShortensWaits(t *testing.T) {
	for _, idle := range []bool{false, true} {
		t.Run(fmt.Sprintf("idle=%v", idle), func(t *testing.T) {
			m := newSim(t, Config{Settings: Settings{HostDelay: time.Hour, IPDelay: time.Hour}},
				map[string]netip.Addr{"a.test": netip.MustParseAddr("10.9.9.1")})
			pages := 4
			if idle {
				pages = 1
			}
			for i := 0; i < pages; i++ {
				m.add(fmt.Sprintf("http://a.test/p%d", i), Meta{})
			}
			m.reconfigureAfter(2, func() { // robots.txt and the first page released
				if _, ok := m.s.states["http://a.test"]; ok == idle {
					t.Fatalf("the key is idle: %v, want %v", !ok, idle)
				}
			}, func(set *liveSettings) {
				set.HostDelay, set.IPDelay = 200*time.Millisecond, 100*time.Millisecond
				if idle {
					m.add("http://a.test/late", Meta{})
				}
			})
			m.run(fetched(20*time.Millisecond), 1000)
			gs := m.gaps(simKey)["http://a.test"]
			want := fmt.Sprint([]time.Duration{time.Hour, 200 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond})
			if idle {
				want = fmt.Sprint([]time.Duration{time.Hour, 200 * time.Millisecond})
			}
			if fmt.Sprint(gs) != want {
				t.Errorf("gaps %v, want %s (the wait of an hour shortened to the new delay)", gs, want)
			}
		})
	}
}

// TestLoweredIPDelayKeepsHolds: a lowered IP delay shortens an address's
// wait to the new delay, but not below a release's bound on the address
// (which carries the waits of keys another agent fetched), and a held
// address stays held, its wait after the hold shortened.
func TestLoweredIPDelayKeepsHolds(t *testing.T) {
	m := newSim(t, Config{Settings: Settings{HostDelay: 100 * time.Millisecond, IPDelay: time.Hour}}, nil)
	m.clock.Advance(10 * time.Second)
	s, now := m.s, m.f.now()
	free, bounded, held := netip.MustParseAddr("10.9.10.1"), netip.MustParseAddr("10.9.10.2"), netip.MustParseAddr("10.9.10.3")
	for _, a := range []netip.Addr{free, bounded, held} {
		s.wb.entryFor(a).nextFetch = later(now, time.Hour) // as release sets it
	}
	m.f.DelayAddrs(map[netip.Addr]time.Duration{bounded: 30 * time.Minute})
	h := s.wb.entryFor(held)
	h.held, h.heldNext, h.nextFetch = true, h.nextFetch, heldTime
	set := *s.set
	set.IPDelay = 200 * time.Millisecond
	s.reconfigure(&set)
	if got := time.Duration(s.wb.entryFor(free).nextFetch - now); got != 200*time.Millisecond {
		t.Errorf("free address: next fetch in %v, want the new IP delay", got)
	}
	if got := time.Duration(s.wb.entryFor(bounded).nextFetch - now); got != 30*time.Minute {
		t.Errorf("address under a release's bound: next fetch in %v, want the bound (30m)", got)
	}
	if h.nextFetch != heldTime || time.Duration(h.heldNext-now) != 200*time.Millisecond {
		t.Errorf("held address: next fetch %d (held %v), after the hold in %v; want held, then the new IP delay",
			h.nextFetch, h.nextFetch == heldTime, time.Duration(h.heldNext-now))
	}
}

// TestRaisedIPDelayHeldAddress: a raised IP delay holds for a held address
// too: once released, its next request waits the new delay from its last
// exchange (the increase was added to the hold's sentinel time, and lost
// at the release).
func TestRaisedIPDelayHeldAddress(t *testing.T) {
	m := newSim(t, Config{Settings: Settings{HostDelay: 100 * time.Millisecond, IPDelay: 100 * time.Millisecond}}, nil)
	m.clock.Advance(10 * time.Second)
	s, now := m.s, m.f.now()
	h := s.wb.entryFor(netip.MustParseAddr("10.9.11.1"))
	h.held, h.heldNext, h.nextFetch = true, later(now, 100*time.Millisecond), heldTime
	set := *s.set
	set.IPDelay = time.Second
	s.reconfigure(&set)
	if h.nextFetch != heldTime || time.Duration(h.heldNext-now) != time.Second {
		t.Errorf("held address: held %v, after the hold in %v; want held, then the new IP delay (1s)",
			h.nextFetch == heldTime, time.Duration(h.heldNext-now))
	}
}

// TestSimLoweredCrawlDelayCap: a key waiting out a robots.txt Crawl-delay
// at its cap waits the lower cap once it is lowered, from its last
// exchange, as every request after.
func TestSimLoweredCrawlDelayCap(t *testing.T) {
	m := newSim(t, Config{Settings: Settings{HostDelay: 100 * time.Millisecond, IPDelay: 10 * time.Millisecond, CrawlDelayCap: time.Hour}},
		map[string]netip.Addr{"a.test": netip.MustParseAddr("10.9.12.1")})
	for i := 0; i < 3; i++ {
		m.add(fmt.Sprintf("http://a.test/p%d", i), Meta{})
	}
	m.reconfigureAfter(2, nil, func(set *liveSettings) { set.CrawlDelayCap = 300 * time.Millisecond }) // robots.txt and a page released
	m.run(func(tk *Task) (Outcome, time.Duration) {
		if tk.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{delay: 2 * time.Hour}}, time.Millisecond
		}
		return Outcome{Result: Fetched}, 20 * time.Millisecond
	}, 1000)
	if gs := fmt.Sprint(m.gaps(simKey)["http://a.test"]); gs != "[1h0m0s 300ms 300ms]" {
		t.Errorf("gaps %s, want [1h0m0s 300ms 300ms] (the Crawl-delay at its cap, then at the lowered cap)", gs)
	}
}

// TestSimLoweredMaxDelay: a key waiting out a Retry-After of an hour waits
// the lowered MaxDelay instead, from the end of the 503.
func TestSimLoweredMaxDelay(t *testing.T) {
	m := newSim(t, Config{Settings: Settings{HostDelay: 100 * time.Millisecond, IPDelay: 10 * time.Millisecond, MaxDelay: time.Hour,
		MaxRetries: 1, RetryDelay: 200 * time.Millisecond}}, map[string]netip.Addr{"a.test": netip.MustParseAddr("10.9.13.1")})
	m.add("http://a.test/x", Meta{})
	tries := 0
	m.reconfigureAfter(2, nil, func(set *liveSettings) { set.MaxDelay = 500 * time.Millisecond }) // robots.txt and the 503 released
	m.run(func(tk *Task) (Outcome, time.Duration) {
		if tk.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{}}, time.Millisecond
		}
		if tries++; tries == 1 {
			return Outcome{Result: RetryLater, RetryAfter: time.Hour}, time.Millisecond
		}
		return Outcome{Result: Fetched}, time.Millisecond
	}, 1000)
	if gs := m.gaps(simKey)["http://a.test"]; len(gs) != 2 || gs[1] != 500*time.Millisecond {
		t.Errorf("gaps %v, want the retry 500ms after the 503 (the lowered MaxDelay)", gs)
	}
}
