package frontier

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestMoveOut: once the router gives an address to another agent, MoveOut
// stops dispatching to it, hands its queued URLs over (each once, none
// fetched here after MoveOut reports nothing in flight) and says how long
// the next request must wait; the frontier then ends with nothing held.
func TestMoveOut(t *testing.T) {
	const n = 30
	h, r, addrB, gone := givenUpHarness(t, "10.4.0.1", "10.4.0.2", n)
	var movedAt atomic.Int64 // unix nanos when MoveOut reported nothing in flight
	var wait time.Duration
	var once sync.Once
	var wg sync.WaitGroup
	answer := func(tk *Task) Outcome {
		if tk.Addr == addrB && !tk.Robots {
			once.Do(func() {
				gone.Store(true)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						inFlight, waits, err := h.f.MoveOut(context.Background())
						if err != nil {
							t.Error(err)
							return
						}
						if inFlight == 0 {
							wait = waits[addrB]
							movedAt.Store(time.Now().UnixNano())
							return
						}
						time.Sleep(time.Millisecond)
					}
				}()
			})
			time.Sleep(5 * time.Millisecond) // in flight while MoveOut runs
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
	checkHandedOverOnce(t, h, r, addrB, n, movedAt.Load(), "MoveOut")
	if wait <= 0 || wait > 20*time.Millisecond {
		t.Errorf("wait before the next request to b: %s, want the host delay's rest (0, 20ms]", wait)
	}
	t.Logf("%d URLs of b handed over, wait %s", len(r.ready), wait)
}

// TestHoldAddrs: an address held before the run gets no request until its
// release, and then not before the release's wait; others are fetched
// meanwhile.
func TestHoldAddrs(t *testing.T) {
	addrB := netip.MustParseAddr("10.4.0.2")
	res := mapResolver{"a.test": netip.MustParseAddr("10.4.0.1"), "b.test": addrB}
	h := newHarness(t, Config{Resolver: res})
	for i := 0; i < 5; i++ {
		h.enqueue(fmt.Sprintf("http://b.test/p%d", i))
		h.enqueue(fmt.Sprintf("http://a.test/p%d", i))
	}
	id, err := h.f.HoldAddrs(context.Background(), func(a netip.Addr) bool { return a == addrB })
	if err != nil {
		t.Fatal(err)
	}
	const wait = 100 * time.Millisecond
	var released atomic.Int64
	go func() {
		time.Sleep(300 * time.Millisecond)
		released.Store(time.Now().UnixNano())
		if err := h.f.ReleaseAddrs(context.Background(), id, map[netip.Addr]time.Duration{addrB: wait}); err != nil {
			t.Error(err)
		}
	}()
	if err := h.run(2, nil); err != nil {
		t.Fatal(err)
	}
	var first time.Time
	nb := 0
	for _, rec := range h.log {
		if rec.addr == addrB {
			nb++
			if first.IsZero() || rec.start.Before(first) {
				first = rec.start
			}
		}
	}
	if nb != 6 { // robots.txt and 5 pages
		t.Fatalf("%d requests to b, want 6", nb)
	}
	if r := time.Unix(0, released.Load()); first.Before(r.Add(wait)) {
		t.Errorf("first request to b %s after the release, want ≥ %s", first.Sub(r), wait)
	}
	if h.f.Holding() != 0 {
		t.Errorf("%d holds left", h.f.Holding())
	}
}

// movingRouter gives addrB to whom owner names, and keeps each ready URL
// forwarded with its destination.
type movingRouter struct {
	splitRouter
	addrB netip.Addr
	owner atomic.Value // Peer
	sent  map[string]Peer
}

func (r *movingRouter) AddrOwner(a netip.Addr) Peer {
	if a == r.addrB {
		return r.owner.Load().(Peer)
	}
	return Self
}
func (r *movingRouter) ReadyOwner([]byte) Peer { return Self }
func (r *movingRouter) ForwardReady(to Peer, rec []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent[string(ReadyRecord(rec)[MetaLen:])] = to
	return nil
}

func (r *movingRouter) sentTo(url string) Peer {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent[url]
}

// TestMovedFollowsOwner: a visit state moved to another agent follows its
// address's owner in the router's view as it changes: a URL of it goes to
// the agent owning the address now, not to the one it moved to (which
// left), and is fetched here once the address is this agent's again.
func TestMovedFollowsOwner(t *testing.T) {
	addrB := netip.MustParseAddr("10.4.0.2")
	res := mapResolver{"a.test": netip.MustParseAddr("10.4.0.1"), "b.test": addrB}
	r := &movingRouter{addrB: addrB, sent: map[string]Peer{}}
	r.owner.Store(Peer("old"))
	h := newHarness(t, Config{Resolver: res, Router: r, Settings: Settings{HostDelay: 20 * time.Millisecond}})
	h.enqueue("http://b.test/q0")
	h.enqueue("http://a.test/p0")
	h.enqueue("http://a.test/p1")
	waitSent := func(url string) {
		for end := time.Now().Add(5 * time.Second); r.sentTo(url) == "" && time.Now().Before(end); {
			time.Sleep(time.Millisecond)
		}
	}
	answer := func(tk *Task) Outcome {
		if tk.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{}}
		}
		switch tk.URL() {
		case "http://a.test/p0":
			waitSent("http://b.test/q0")
			r.owner.Store(Peer("new")) // "old" left the crawl
			h.enqueue("http://b.test/q1")
		case "http://a.test/p1":
			waitSent("http://b.test/q1")
			r.owner.Store(Self) // the address is this agent's again
			h.enqueue("http://b.test/q2")
		}
		return Outcome{Result: Fetched}
	}
	if err := h.run(2, answer); err != nil {
		t.Fatal(err)
	}
	for url, want := range map[string]Peer{"http://b.test/q0": "old", "http://b.test/q1": "new"} {
		if got := r.sentTo(url); got != want {
			t.Errorf("%s forwarded to %q, want %q", url, got, want)
		}
	}
	if got := r.sentTo("http://b.test/q2"); got != "" {
		t.Errorf("b.test/q2 forwarded to %q, want fetched here", got)
	}
	if got := h.pages(); !slices.Contains(got, "http://b.test/q2") {
		t.Errorf("fetched %v, want b.test/q2 among them", got)
	}
}
