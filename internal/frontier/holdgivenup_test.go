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
	const n = 30
	h, r, addrB, gone := givenUpHarness(t, "10.5.0.1", "10.5.0.2", n)
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
	checkHandedOverOnce(t, h, r, addrB, n, heldAt.Load(), "HoldGivenUp")
}

// givenUpHarness returns a frontier with n URLs queued on each of a.test
// (at ipA) and b.test (at ipB) whose router gives ipB to another agent
// once gone is set.
func givenUpHarness(t *testing.T, ipA, ipB string, n int) (h *harness, r *readySplit, addrB netip.Addr, gone *atomic.Bool) {
	addrB = netip.MustParseAddr(ipB)
	res := mapResolver{"a.test": netip.MustParseAddr(ipA), "b.test": addrB}
	gone = new(atomic.Bool)
	r = &readySplit{splitRouter: splitRouter{mine: "", addr: func(a netip.Addr) Peer {
		if a == addrB && gone.Load() {
			return "other"
		}
		return Self
	}}}
	h = newHarness(t, Config{Resolver: res, Router: r, Settings: Settings{HostDelay: 20 * time.Millisecond}})
	for i := 0; i < n; i++ {
		h.enqueue(fmt.Sprintf("http://b.test/p%d", i))
		h.enqueue(fmt.Sprintf("http://a.test/p%d", i))
	}
	return h, r, addrB, gone
}

// checkHandedOverOnce checks that each URL of givenUpHarness was fetched
// here or handed over, once, and that none at addrB was fetched here
// after since (unix nanoseconds: when step reported nothing in flight).
func checkHandedOverOnce(t *testing.T, h *harness, r *readySplit, addrB netip.Addr, n int, since int64, step string) {
	t.Helper()
	fetched := map[string]int{}
	for _, rec := range h.log {
		if rec.robots {
			continue
		}
		fetched[rec.url]++
		if rec.addr == addrB && rec.start.UnixNano() > since {
			t.Errorf("%s fetched here after %s reported nothing in flight", rec.url, step)
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
