package frontier

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestHoldGivenUp: once the router gives an address to another agent,
// HoldGivenUp stops dispatching to it and moves nothing out: when it reports
// nothing in flight, no URL of it has been handed over and none is fetched
// here after; a MoveOut then hands every one of them over once.
func TestHoldGivenUp(t *testing.T) {
	addrB := netip.MustParseAddr("10.5.0.2")
	res := mapResolver{"a.test": netip.MustParseAddr("10.5.0.1"), "b.test": addrB}
	var gone atomic.Bool
	r := &readySplit{splitRouter: splitRouter{mine: "", addr: func(a netip.Addr) Peer {
		if a == addrB && gone.Load() {
			return "other"
		}
		return Self
	}}}
	h := newHarness(t, Config{Resolver: res, Router: r, Settings: Settings{HostDelay: 20 * time.Millisecond}})
	const n = 30
	for i := 0; i < n; i++ {
		h.enqueue(fmt.Sprintf("http://b.test/p%d", i))
		h.enqueue(fmt.Sprintf("http://a.test/p%d", i))
	}
	var heldAt atomic.Int64 // unix nanos when HoldGivenUp reported nothing in flight
	var movedBefore int
	var once sync.Once
	var wg sync.WaitGroup
	untilIdle := func(step func() (int, error)) {
		for {
			inFlight, err := step()
			if err != nil {
				t.Error(err)
				return
			}
			if inFlight == 0 {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	answer := func(tk *Task) Outcome {
		if tk.Addr == addrB && !tk.Robots {
			once.Do(func() {
				gone.Store(true)
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx := context.Background()
					untilIdle(func() (int, error) { return h.f.HoldGivenUp(ctx) })
					heldAt.Store(time.Now().UnixNano())
					r.mu.Lock()
					movedBefore = len(r.ready)
					r.mu.Unlock()
					time.Sleep(30 * time.Millisecond) // past b's host delay: still nothing dispatched
					untilIdle(func() (int, error) { in, _, err := h.f.MoveOut(ctx); return in, err })
				}()
			})
			time.Sleep(5 * time.Millisecond) // in flight while HoldGivenUp runs
		}
		if tk.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{}}
		}
		return Outcome{Result: Fetched}
	}
	if err := h.run(4, answer); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if movedBefore != 0 {
		t.Errorf("%d URLs handed over by HoldGivenUp, want none", movedBefore)
	}
	fetched := map[string]int{}
	for _, rec := range h.log {
		if rec.robots {
			continue
		}
		fetched[rec.url]++
		if rec.addr == addrB && rec.start.UnixNano() > heldAt.Load() {
			t.Errorf("%s fetched here after HoldGivenUp reported nothing in flight", rec.url)
		}
	}
	for _, rec := range r.ready {
		fetched[string(rec[MetaLen:])]++
	}
	for i := 0; i < n; i++ {
		for _, host := range []string{"a", "b"} {
			if u := fmt.Sprintf("http://%s.test/p%d", host, i); fetched[u] != 1 {
				t.Errorf("%s fetched or handed over %d times", u, fetched[u])
			}
		}
	}
	if len(r.ready) == 0 {
		t.Fatal("nothing handed over")
	}
}
