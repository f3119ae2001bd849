package frontier

import (
	"context"
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

// TestHostDownKeepsURLs has a host refuse every connection for its first
// tries (robots.txt and pages) and then answer: no URL is given up, none
// uses a try for the outage, every one is fetched once, the waits between
// tries grow (doubling, capped by HostDownBackoff) and none is shorter
// than the host delay.
func TestHostDownKeepsURLs(t *testing.T) {
	const delay, most = 20 * time.Millisecond, 160 * time.Millisecond
	res := mapResolver{"down.test": netip.MustParseAddr("10.7.0.1")}
	d := newDrops()
	h := newHarness(t, Config{Settings: Settings{HostDelay: delay, MaxRetries: 1, HostDownBackoff: most, HostDownGiveUp: time.Minute},
		MaxFailures: 2, Resolver: res, Dropped: d.fn})
	for i := 0; i < 10; i++ {
		h.enqueue(fmt.Sprintf("http://down.test/%d", i))
	}
	var refused atomic.Int32
	var seen KeyInfo
	err := h.run(2, func(t *Task) Outcome {
		n := refused.Add(1)
		if n == 6 {
			// Five tries found the host down: the inspection says so.
			info, err := h.f.Where(context.Background(), "http://down.test/9")
			if err == nil && info.Key != nil {
				seen = *info.Key
			}
		}
		if n <= 8 {
			return Outcome{Result: Unreachable}
		}
		if t.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{}}
		}
		return Outcome{Result: Fetched}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.told) != 0 {
		t.Errorf("URLs given up: %v", d.told)
	}
	fetched := map[string]int{}
	for _, p := range h.pages() {
		fetched[p]++
	}
	for i := 0; i < 10; i++ {
		if u := fmt.Sprintf("http://down.test/%d", i); fetched[u] < 1 {
			t.Errorf("%s never fetched", u)
		}
	}
	if seen.DownTries != 5 || seen.Down <= 0 || seen.DelayWhy != DelayHostDown {
		t.Errorf("the key during the outage: %d tries down for %s, delay %s (%s); want 5 tries, host-down", seen.DownTries, seen.Down, seen.Delay, seen.DelayWhy)
	}
	if n := h.stats.HostDownWaits.Load(); n != 8 {
		t.Errorf("HostDownWaits = %d, want 8", n)
	}
	var gaps []time.Duration
	for i := 1; i < len(h.log) && i <= 8; i++ {
		gaps = append(gaps, h.log[i].start.Sub(h.log[i-1].end))
	}
	for i, g := range gaps {
		if g < delay {
			t.Errorf("try %d came %s after the last, under the host delay %s", i+1, g, delay)
		}
	}
	// The waits double from the first (the delay or more) up to the cap:
	// the last ones are near it, far above the delay.
	if last := gaps[len(gaps)-1]; last < most-10*time.Millisecond || last > most+100*time.Millisecond {
		t.Errorf("the last wait was %s, want about the cap %s (waits %v)", last, most, gaps)
	}
	h.checkGaps(func(r fetchRecord) string { return r.key }, delay)
}

// TestHostDownGivenUp has a host refuse every connection: once it has
// been unreachable for HostDownGiveUp it is given up, and each of its
// URLs is told to Dropped once as DropHostDown.
func TestHostDownGivenUp(t *testing.T) {
	res := mapResolver{"gone.test": netip.MustParseAddr("10.7.0.2"), "up.test": netip.MustParseAddr("10.7.0.3")}
	d := newDrops()
	h := newHarness(t, Config{Settings: Settings{HostDelay: 5 * time.Millisecond, HostDownBackoff: 50 * time.Millisecond,
		HostDownGiveUp: 300 * time.Millisecond}, Resolver: res, Dropped: d.fn})
	for i := 0; i < 20; i++ {
		h.enqueue(fmt.Sprintf("http://gone.test/%d", i))
		h.enqueue(fmt.Sprintf("http://up.test/%d", i))
	}
	start := time.Now()
	err := h.run(2, func(t *Task) Outcome {
		if t.Addr == res["gone.test"] {
			return Outcome{Result: Unreachable}
		}
		if t.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{}}
		}
		return Outcome{Result: Fetched}
	})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Errorf("the host was given up after %s, before HostDownGiveUp", el)
	}
	told := d.byHost(t, map[string]DropReason{"gone.test": DropHostDown}, nil)
	if told["gone.test"] != 20 {
		t.Errorf("told of %d URLs of the host given up, want 20", told["gone.test"])
	}
	if len(h.pages()) != 20 {
		t.Errorf("%d pages fetched, want the 20 of up.test", len(h.pages()))
	}
	if p := h.stats.PurgedURLs.Load(); p != 20 {
		t.Errorf("PurgedURLs = %d, want 20", p)
	}
}
