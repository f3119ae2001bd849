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

	"github.com/petrel-crawler/petrel/internal/urlx"
)

// TestReconfigureDelay raises the host delay in the middle of a crawl of
// one host: the gaps before are short, every gap after the change's first
// release is at least the new delay.
func TestReconfigureDelay(t *testing.T) {
	h := newHarness(t, Config{Settings: Settings{HostDelay: 2 * time.Millisecond}, Resolver: mapResolver{"one.test": netip.MustParseAddr("10.7.0.1")}})
	for i := 0; i < 16; i++ {
		h.enqueue(fmt.Sprintf("http://one.test/p%d", i))
	}
	var n atomic.Int32
	var changed atomic.Int64 // index of the first page fetched after the change
	err := h.run(2, func(tk *Task) Outcome {
		if tk.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{}}
		}
		if n.Add(1) == 8 {
			set := h.f.Settings()
			set.HostDelay = 40 * time.Millisecond
			if err := h.f.Reconfigure(context.Background(), set, h.f.Cuts()); err != nil {
				t.Error(err)
			}
			changed.Store(9)
		}
		return Outcome{Result: Fetched}
	})
	if err != nil {
		t.Fatal(err)
	}
	pages := h.pageRecords()
	if len(pages) != 16 {
		t.Fatalf("%d pages", len(pages))
	}
	for i := int(changed.Load()); i < len(pages); i++ {
		if gap := pages[i].start.Sub(pages[i-1].end); gap < 40*time.Millisecond {
			t.Errorf("page %d: gap %v after the delay was raised to 40ms", i, gap)
		}
	}
	if d := h.f.Settings().HostDelay; d != 40*time.Millisecond {
		t.Errorf("Settings().HostDelay = %v", d)
	}
	if err := h.f.Reconfigure(context.Background(), h.f.Settings(), Cuts{}); err != ErrNotRunning {
		t.Errorf("Reconfigure after Run: %v, want ErrNotRunning", err)
	}
}

// pageRecords returns the page fetches in the order they started.
func (h *harness) pageRecords() []fetchRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []fetchRecord
	for _, r := range h.log {
		if !r.robots {
			out = append(out, r)
		}
	}
	return out
}

func TestReconfigureRefusesBadValues(t *testing.T) {
	h := newHarness(t, Config{Resolver: mapResolver{}})
	for _, bad := range []func(*Settings){
		func(s *Settings) { s.HostDelay = -1 },
		func(s *Settings) { s.ParallelPerKey = 0 },
		func(s *Settings) { s.MaxDelay = 0 },
		func(s *Settings) { s.WorkbenchBytes = 0 },
		func(s *Settings) { s.MaxURLs = -1 },
		func(s *Settings) { s.FrontSize++ },
		func(s *Settings) { s.Assign, _ = ParseAssign("host") },
	} {
		set := h.f.Settings()
		bad(&set)
		if err := h.f.Reconfigure(context.Background(), set, h.f.Cuts()); err == nil || !strings.HasPrefix(err.Error(), "frontier: ") {
			t.Errorf("Reconfigure(%+v) = %v, want an error", set, err)
		}
	}
	if h.f.Settings().ParallelPerKey != 1 {
		t.Error("a refused change was applied")
	}
}

// TestPauseResume: no fetch starts between Pause and Resume; fetches in
// flight at the pause finish; the crawl then completes.
func TestPauseResume(t *testing.T) {
	url, _ := ParseAssign("url")
	h := newHarness(t, Config{Settings: Settings{Assign: url, ParallelPerIP: 4}, Resolver: mapResolver{"one.test": netip.MustParseAddr("10.7.0.2")}})
	for i := 0; i < 40; i++ {
		h.enqueue(fmt.Sprintf("http://one.test/p%d", i))
	}
	var n atomic.Int32
	var mu sync.Mutex
	var pausedAt, resumedAt time.Time
	resumed := make(chan struct{})
	err := h.run(4, func(tk *Task) Outcome {
		if tk.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{}}
		}
		if h.f.Paused() {
			return Outcome{Result: Abandoned} // as the agent's fetchers do
		}
		if n.Add(1) == 10 {
			go func() {
				if err := h.f.Pause(context.Background()); err != nil {
					t.Error(err)
				}
				mu.Lock()
				pausedAt = time.Now()
				mu.Unlock()
				time.Sleep(150 * time.Millisecond)
				mu.Lock()
				resumedAt = time.Now()
				mu.Unlock()
				if err := h.f.Resume(context.Background()); err != nil {
					t.Error(err)
				}
				close(resumed)
			}()
		}
		time.Sleep(5 * time.Millisecond)
		return Outcome{Result: Fetched}
	})
	if err != nil {
		t.Fatal(err)
	}
	<-resumed
	fetched := 0
	for _, r := range h.pageRecords() {
		if r.result != Abandoned && r.start.After(pausedAt) && r.start.Before(resumedAt) {
			t.Errorf("%s started %v after the pause returned, before the resume", r.url, r.start.Sub(pausedAt))
		}
	}
	seen := map[string]bool{}
	h.mu.Lock()
	for _, r := range h.log {
		if !r.robots && !seen[r.url] {
			seen[r.url] = true
			fetched++
		}
	}
	h.mu.Unlock()
	if fetched != 40 {
		t.Errorf("%d distinct pages fetched, want 40", fetched)
	}
}

// TestNarrowingCutsQueued lowers MaxDepth and the per-key budget and sets
// Keep in the middle of a crawl: queued URLs they refuse are cut at
// dispatch and counted, the others fetched.
func TestNarrowingCutsQueued(t *testing.T) {
	res := mapResolver{"a.test": netip.MustParseAddr("10.7.1.1"), "b.test": netip.MustParseAddr("10.7.1.2")}
	h := newHarness(t, Config{Settings: Settings{HostDelay: time.Millisecond}, Resolver: res})
	for i := 0; i < 30; i++ {
		u := mustURL(t, fmt.Sprintf("http://a.test/d%d/p%d", i%3, i))
		if err := h.f.Enqueue(u, Meta{Depth: uint16(i % 3)}); err != nil {
			t.Fatal(err)
		}
		if err := h.f.Enqueue(mustURL(t, fmt.Sprintf("http://b.test/p%d", i)), Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	h.enqueue("http://a.test/skip/me")
	var once sync.Once
	err := h.run(2, func(tk *Task) Outcome {
		if tk.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{}}
		}
		once.Do(func() {
			set := h.f.Settings()
			set.MaxURLsPerKey = 10
			cuts := Cuts{MaxDepth: 1, Keep: func(url string, _ Meta) bool { return !strings.Contains(url, "/skip/") }}
			if err := h.f.Reconfigure(context.Background(), set, cuts); err != nil {
				t.Error(err)
			}
		})
		return Outcome{Result: Fetched}
	})
	if err != nil {
		t.Fatal(err)
	}
	var a, b int
	for _, r := range h.pageRecords() {
		switch {
		case strings.Contains(r.url, "/skip/"):
			t.Errorf("%s fetched after Keep refused it", r.url)
		case strings.HasPrefix(r.url, "http://a.test/d2/") && r.meta.Depth == 2:
			a++ // at most the one fetched before the change
		case strings.HasPrefix(r.url, "http://a.test/"):
			a++
		default:
			b++
		}
	}
	if a > 10 || b > 10 {
		t.Errorf("fetched a.test %d, b.test %d, want at most 10 each after the budget was lowered to 10", a, b)
	}
	if b != 10 {
		t.Errorf("b.test: %d fetched, want 10", b)
	}
	fetched := int64(len(h.pageRecords()))
	if cut := h.stats.CutAtDispatch.Load(); cut+fetched != 61 {
		t.Errorf("cut %d + fetched %d, want all 61 URLs accounted for", cut, fetched)
	}
	if q := h.stats.Queued.Load(); q != 0 {
		t.Errorf("%d URLs still queued", q)
	}
}

// TestReconfigureParallel raises ParallelPerIP mid-crawl: requests in
// flight together grow from one to several.
func TestReconfigureParallel(t *testing.T) {
	url, _ := ParseAssign("url")
	h := newHarness(t, Config{Settings: Settings{Assign: url}, Resolver: mapResolver{"one.test": netip.MustParseAddr("10.7.2.1")}})
	for i := 0; i < 60; i++ {
		h.enqueue(fmt.Sprintf("http://one.test/p%d", i))
	}
	var fl inFlight
	var n atomic.Int32
	peakBefore := 0
	err := h.run(8, func(tk *Task) Outcome {
		if tk.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{}}
		}
		if n.Add(1) == 10 {
			fl.mu.Lock()
			peakBefore = fl.peak
			fl.mu.Unlock()
			set := h.f.Settings()
			set.ParallelPerIP = 8
			if err := h.f.Reconfigure(context.Background(), set, h.f.Cuts()); err != nil {
				t.Error(err)
			}
		}
		fl.fetch(5 * time.Millisecond)
		return Outcome{Result: Fetched}
	})
	if err != nil {
		t.Fatal(err)
	}
	if peakBefore != 1 || fl.peak < 4 {
		t.Errorf("in flight at once: %d before, %d after ParallelPerIP 1 → 8", peakBefore, fl.peak)
	}
}

func mustURL(t *testing.T, raw string) urlx.URL {
	t.Helper()
	u, err := urlx.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestReconfigureDelayHoldsWaitingKeys raises the host delay while a key
// waits for its next fetch (released, next allowed time set by the old
// delay): its next request still comes the new delay after its last one.
func TestReconfigureDelayHoldsWaitingKeys(t *testing.T) {
	h := newHarness(t, Config{Settings: Settings{HostDelay: 100 * time.Millisecond}, Resolver: mapResolver{"one.test": netip.MustParseAddr("10.7.3.1")}})
	for i := 0; i < 5; i++ {
		h.enqueue(fmt.Sprintf("http://one.test/p%d", i))
	}
	var n atomic.Int32
	var applied atomic.Pointer[time.Time]
	err := h.run(1, func(tk *Task) Outcome {
		if tk.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{}}
		}
		if n.Add(1) == 3 {
			// After this page is released: the key then waits out 100ms.
			go func() {
				time.Sleep(5 * time.Millisecond)
				set := h.f.Settings()
				set.HostDelay = 400 * time.Millisecond
				if err := h.f.Reconfigure(context.Background(), set, h.f.Cuts()); err != nil {
					t.Error(err)
				}
				now := time.Now()
				applied.Store(&now)
			}()
		}
		return Outcome{Result: Fetched}
	})
	if err != nil {
		t.Fatal(err)
	}
	pages := h.pageRecords()
	at := applied.Load()
	if len(pages) != 5 || at == nil {
		t.Fatalf("%d pages, change applied: %v", len(pages), at != nil)
	}
	checked := 0
	for i := 1; i < len(pages); i++ {
		if pages[i].start.After(*at) {
			checked++
			if gap := pages[i].start.Sub(pages[i-1].end); gap < 400*time.Millisecond {
				t.Errorf("page %d: gap %v after the delay was raised to 400ms (the one before ended %v before the change)", i, gap, at.Sub(pages[i-1].end))
			}
		}
	}
	if checked < 2 {
		t.Errorf("only %d pages began after the change", checked)
	}
}

// TestReconfigureCutsRetries narrows Keep while a fetch that will be
// retried is in flight: the retry is cut at dispatch like a first try.
func TestReconfigureCutsRetries(t *testing.T) {
	h := newHarness(t, Config{Settings: Settings{HostDelay: time.Millisecond, MaxRetries: 3}, Resolver: mapResolver{"one.test": netip.MustParseAddr("10.7.4.1")}})
	h.enqueue("http://one.test/gone/x")
	h.enqueue("http://one.test/kept")
	err := h.run(1, func(tk *Task) Outcome {
		if tk.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{}}
		}
		if strings.Contains(tk.URL(), "/gone/") {
			cuts := Cuts{Keep: func(url string, _ Meta) bool { return !strings.Contains(url, "/gone/") }}
			if err := h.f.Reconfigure(context.Background(), h.f.Settings(), cuts); err != nil {
				t.Error(err)
			}
			return Outcome{Result: RetryLater}
		}
		return Outcome{Result: Fetched}
	})
	if err != nil {
		t.Fatal(err)
	}
	gone := 0
	for _, r := range h.pageRecords() {
		if strings.Contains(r.url, "/gone/") {
			gone++
		}
	}
	if gone != 1 {
		t.Errorf("/gone/x fetched %d times, want once (its retries cut after Keep refused it)", gone)
	}
	if c := h.stats.CutAtDispatch.Load(); c != 1 {
		t.Errorf("CutAtDispatch %d, want 1", c)
	}
}

// TestReconfigureTakesBackUnbegunTasks narrows Keep while tasks wait in
// Todo's buffer: they are taken back and cut, and a task a fetcher holds
// but has not begun is Recalled.
func TestReconfigureTakesBackUnbegunTasks(t *testing.T) {
	res := mapResolver{}
	for i := 0; i < 6; i++ {
		res[fmt.Sprintf("h%d.test", i)] = netip.AddrFrom4([4]byte{10, 7, 5, byte(i + 1)})
	}
	h := newHarness(t, Config{Settings: Settings{HostDelay: time.Millisecond}, Resolver: res})
	for i := 0; i < 6; i++ {
		h.enqueue(fmt.Sprintf("http://h%d.test/gone/p", i))
	}
	var once sync.Once
	err := h.run(1, func(tk *Task) Outcome {
		if tk.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{}}
		}
		once.Do(func() {
			// The other hosts' pages are dispatched meanwhile.
			for deadline := time.Now().Add(10 * time.Second); len(h.f.todo) < 3 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			if len(h.f.todo) < 3 {
				t.Errorf("only %d tasks waited in Todo", len(h.f.todo))
			}
			held := <-h.f.todo // as a fetcher that has received a task
			cuts := Cuts{Keep: func(string, Meta) bool { return false }}
			if err := h.f.Reconfigure(context.Background(), h.f.Settings(), cuts); err != nil {
				t.Error(err)
			}
			if n := len(h.f.todo); n != 0 {
				t.Errorf("%d tasks still in Todo after the change", n)
			}
			if !h.f.Recalled(held) {
				t.Errorf("a task dispatched before the change is not Recalled")
			}
			h.f.Done(Outcome{Task: held, Result: Abandoned, End: time.Now()})
		})
		return Outcome{Result: Fetched}
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(h.pageRecords()); n != 1 {
		t.Errorf("%d pages fetched, want only the one begun before the change", n)
	}
	if c := h.stats.CutAtDispatch.Load(); c != 5 {
		t.Errorf("CutAtDispatch %d, want the 5 others", c)
	}
}
