package frontier

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestFetchedElsewhere checks Config.FetchedElsewhere: a queued page URL it
// names is dropped at its first dispatch, unfetched and not counted against
// MaxURLs; it is asked once per URL (not for a retry, nor for robots.txt),
// and every other URL is fetched.
func TestFetchedElsewhere(t *testing.T) {
	for _, retry := range []bool{false, true} {
		t.Run(fmt.Sprintf("retry=%v", retry), func(t *testing.T) { fetchedElsewhere(t, retry) })
	}
}

// fetchedElsewhere runs five URLs to fetch and five fetched elsewhere on
// three hosts. Without retries, MaxURLs is the five: a dropped URL counted
// as dispatched would leave one unfetched. With retries, every page fails
// once first.
func fetchedElsewhere(t *testing.T, retry bool) {
	var mu sync.Mutex
	asked := map[string]int{}
	elsewhere := func(url string) bool {
		mu.Lock()
		defer mu.Unlock()
		asked[url]++
		return strings.HasSuffix(url, "/odd")
	}
	set := Settings{MaxURLs: 5}
	if retry {
		set = Settings{MaxRetries: 2}
	}
	h := newHarness(t, Config{Settings: set, Resolver: addrs(3, 1), FetchedElsewhere: elsewhere})
	url := func(i int) string {
		tail := "even"
		if i%2 == 1 {
			tail = "odd"
		}
		return fmt.Sprintf("http://%s/%d/%s", hostName(i%3), i, tail)
	}
	for i := 0; i < 10; i++ {
		h.enqueue(url(i))
	}
	failed := map[string]bool{}
	err := h.run(2, func(t *Task) Outcome {
		if t.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{}}
		}
		mu.Lock()
		defer mu.Unlock()
		if retry && !failed[t.URL()] {
			failed[t.URL()] = true
			return Outcome{Result: RetryLater}
		}
		return Outcome{Result: Fetched}
	})
	if err != nil {
		t.Fatal(err)
	}
	fetched := map[string]int{}
	for _, r := range h.log {
		if !r.robots && r.result == Fetched {
			fetched[r.url]++
		}
	}
	for i := 0; i < 10; i++ {
		u, want := url(i), 1-i%2
		if fetched[u] != want {
			t.Errorf("%s fetched %d times, want %d", u, fetched[u], want)
		}
		if asked[u] != 1 {
			t.Errorf("FetchedElsewhere asked %d times of %s, want once", asked[u], u)
		}
	}
	for u := range asked {
		if strings.HasSuffix(u, "/robots.txt") {
			t.Errorf("FetchedElsewhere asked of %s", u)
		}
	}
}

// heldFilter is a readySplit that is also a ReadyFilter holding every URL
// whose path ends in "held".
type heldFilter struct {
	readySplit
	asked int
}

func (r *heldFilter) HeldAlready(rec []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked++
	return strings.HasSuffix(string(rec), "held")
}

// TestReadyFilter checks that a URL the sieve finds new for an address of
// this agent's is dropped, never queued nor fetched, when the router's
// ReadyFilter holds it already; every other is fetched.
func TestReadyFilter(t *testing.T) {
	r := &heldFilter{}
	h := newHarness(t, Config{Resolver: addrs(2, 1), Router: r})
	for i := 0; i < 6; i++ {
		tail := "new"
		if i%3 == 0 {
			tail = "held"
		}
		h.enqueue(fmt.Sprintf("http://%s/%d/%s", hostName(i%2), i, tail))
	}
	if err := h.run(2, nil); err != nil {
		t.Fatal(err)
	}
	pages := h.pages()
	for _, p := range pages {
		if strings.HasSuffix(p, "held") {
			t.Errorf("%s fetched, held already", p)
		}
	}
	if len(pages) != 4 || r.asked != 6 {
		t.Errorf("%d pages fetched, filter asked %d times; want 4 and 6", len(pages), r.asked)
	}
}

// TestOverlappingHolds: an address under two holds gets no request until
// both are released, and then not before the wait of the first release,
// though the second carries none (a returning agent's hold over every
// address given back, ended after each old owner's own release).
func TestOverlappingHolds(t *testing.T) {
	addrB := netip.MustParseAddr("10.4.0.2")
	res := mapResolver{"a.test": netip.MustParseAddr("10.4.0.1"), "b.test": addrB}
	h := newHarness(t, Config{Resolver: res})
	for i := 0; i < 3; i++ {
		h.enqueue(fmt.Sprintf("http://b.test/p%d", i))
		h.enqueue(fmt.Sprintf("http://a.test/p%d", i))
	}
	isB := func(a netip.Addr) bool { return a == addrB }
	owner, err := h.f.HoldAddrs(context.Background(), isB)
	if err != nil {
		t.Fatal(err)
	}
	all, err := h.f.HoldAddrs(context.Background(), isB)
	if err != nil {
		t.Fatal(err)
	}
	const wait = 400 * time.Millisecond
	var released, allReleased atomic.Int64
	go func() {
		time.Sleep(100 * time.Millisecond)
		released.Store(time.Now().UnixNano())
		if err := h.f.ReleaseAddrs(context.Background(), owner, map[netip.Addr]time.Duration{addrB: wait}); err != nil {
			t.Error(err)
		}
		time.Sleep(50 * time.Millisecond)
		allReleased.Store(time.Now().UnixNano())
		if err := h.f.ReleaseAddrs(context.Background(), all, nil); err != nil {
			t.Error(err)
		}
	}()
	if err := h.run(2, nil); err != nil {
		t.Fatal(err)
	}
	var first time.Time
	for _, rec := range h.log {
		if rec.addr == addrB && (first.IsZero() || rec.start.Before(first)) {
			first = rec.start
		}
	}
	if first.Before(time.Unix(0, allReleased.Load())) {
		t.Errorf("a request to b before its second hold was released")
	}
	if r := time.Unix(0, released.Load()); first.Before(r.Add(wait)) {
		t.Errorf("first request to b %s after the first release, want ≥ %s (its wait)", first.Sub(r), wait)
	}
}

// TestHoldTakesBack: tasks dispatched to an address before it is held, and
// not begun (in Todo's buffer), are taken back: none is fetched before the
// release.
func TestHoldTakesBack(t *testing.T) {
	addrB := netip.MustParseAddr("10.4.0.2")
	res := mapResolver{"b.test": addrB}
	for i := 0; i < 8; i++ {
		res[fmt.Sprintf("b%d.test", i)] = addrB
	}
	h := newHarness(t, Config{Resolver: res, Settings: Settings{ParallelPerIP: 8}})
	for i := 0; i < 8; i++ {
		h.enqueue(fmt.Sprintf("http://b%d.test/p", i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.f.Run(ctx) }()
	// robots.txt first: answer those, so that page tasks pile up in Todo.
	// A host's page task can come before another host's robots.txt: it is
	// fetched at once (begun before the hold, so not taken back).
	deadline := time.Now().Add(10 * time.Second)
	robots, early := 0, 0
	for robots < 8 && time.Now().Before(deadline) {
		tk := <-h.f.Todo()
		if !tk.Robots {
			early++
			h.f.Done(Outcome{Task: tk, Result: Fetched, End: time.Now()})
			continue
		}
		robots++
		h.f.Done(Outcome{Task: tk, Result: Fetched, Robots: allowAll{}, End: time.Now()})
	}
	time.Sleep(200 * time.Millisecond) // the scheduler fills Todo's buffer
	id, err := h.f.HoldAddrs(ctx, func(a netip.Addr) bool { return a == addrB })
	if err != nil {
		t.Fatal(err)
	}
	var got []*Task
	timeout := time.After(300 * time.Millisecond)
	for loop := true; loop; {
		select {
		case tk := <-h.f.Todo():
			if h.f.Recalled(tk) {
				h.f.Done(Outcome{Task: tk, Result: Abandoned, End: time.Now()})
				continue
			}
			got = append(got, tk)
		case <-timeout:
			loop = false
		}
	}
	if len(got) > 0 {
		t.Fatalf("%d tasks to a held address handed to a fetcher after HoldAddrs returned (first %s)", len(got), got[0].URL())
	}
	if err := h.f.ReleaseAddrs(ctx, id, nil); err != nil {
		t.Fatal(err)
	}
	pages := early
	for pages < 8 {
		tk := <-h.f.Todo()
		if h.f.Recalled(tk) {
			h.f.Done(Outcome{Task: tk, Result: Abandoned, End: time.Now()})
			continue
		}
		pages++
		h.f.Done(Outcome{Task: tk, Result: Fetched, End: time.Now()})
	}
	cancel()
	<-done
}
