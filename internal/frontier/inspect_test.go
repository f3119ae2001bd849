package frontier

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// TestWhereAndHost stops a crawl with one fetch in flight and asks where
// URLs are: in flight, queued in RAM, virtualized, held by the
// distributor, in the ready queue, not held; and what a host's state is.
func TestWhereAndHost(t *testing.T) {
	res := mapResolver{"a.test": netip.MustParseAddr("10.8.0.1"), "b.test": netip.MustParseAddr("10.8.0.2")}
	h := newHarness(t, Config{Settings: Settings{FrontSize: 1, WorkbenchBytes: 300, HostDelay: time.Millisecond}, Resolver: res})
	for i := 0; i < 30; i++ {
		h.enqueue(fmt.Sprintf("http://a.test/p%d", i))
	}
	for i := 0; i < 5; i++ {
		h.enqueue(fmt.Sprintf("http://b.test/p%d", i))
	}
	started := make(chan string)
	gate := make(chan struct{})
	done := make(chan error)
	go func() {
		first := true
		done <- h.run(1, func(tk *Task) Outcome {
			if tk.Robots {
				return Outcome{Result: Fetched, Robots: allowAll{delay: 20 * time.Millisecond}}
			}
			if first {
				first = false
				started <- tk.URL()
				<-gate
			}
			return Outcome{Result: Fetched}
		})
	}()
	ctx := context.Background()
	flying := <-started
	where := func(url string) URLInfo {
		t.Helper()
		info, err := h.f.Where(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	if in := where(flying); in.Place != InFlight || in.Key == nil || in.Key.Key != "http://a.test" || in.Key.InFlight != 1 {
		t.Errorf("%s: %+v, want in flight in key http://a.test", flying, in)
	}
	if in := where("http://a.test/p1"); in.Place != Queued || in.Position != 0 {
		t.Errorf("a/p1: %v at %d, want queued at 0", in.Place, in.Position)
	}
	in := where("http://a.test/p29")
	if in.Place != Virtualized || in.Position != 28 || in.Key.OnDisk == 0 {
		t.Errorf("a/p29: %v at %d (%+v), want virtualized at 28", in.Place, in.Position, in.Key)
	}
	if in := where("http://b.test/p0"); in.Place != Held {
		t.Errorf("b/p0: %v, want held by the distributor (front of 1)", in.Place)
	}
	if in := where("http://b.test/p3"); in.Place != InReady {
		t.Errorf("b/p3: %v, want in the ready queue", in.Place)
	}
	if in := where("http://c.test/"); in.Place != NotHeld {
		t.Errorf("c.test: %v, want not held", in.Place)
	}
	hi, err := h.f.Host(ctx, "a.test")
	if err != nil {
		t.Fatal(err)
	}
	if !hi.Known || !hi.Resolved || hi.Addr != res["a.test"] || len(hi.Keys) != 1 || hi.Keys[0].Queued != 29 ||
		!hi.Robots["http://a.test"].Fetched || hi.Budget["http://a.test"] != 0 {
		t.Errorf("Host(a.test) = %+v", hi)
	}
	if hi.Keys[0].DelayWhy != DelayCrawlDelay || hi.Keys[0].Delay != 20*time.Millisecond {
		t.Errorf("a.test delay %v (%v), want 20ms by crawl-delay", hi.Keys[0].Delay, hi.Keys[0].DelayWhy)
	}
	if hi, _ := h.f.Host(ctx, "nowhere.test"); hi.Known {
		t.Error("an unknown host is known")
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := h.f.Where(ctx, flying); err != ErrNotRunning {
		t.Errorf("Where after Run: %v", err)
	}
}
