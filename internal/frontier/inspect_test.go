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

// TestKeysTopN asks for the visit states holding most URLs while a crawl
// is blocked on its first fetch: the first limit of them by queued URLs,
// ties by key, whatever the limit.
func TestKeysTopN(t *testing.T) {
	res := mapResolver{}
	h := newHarness(t, Config{Settings: Settings{FrontSize: 100, HostDelay: time.Millisecond}, Resolver: res})
	for i := 0; i < 12; i++ {
		host := fmt.Sprintf("h%02d.test", i)
		res[host] = netip.AddrFrom4([4]byte{10, 9, 0, byte(i + 1)})
		for j := 0; j < 1+i%5; j++ { // 1 to 5 URLs: ties
			h.enqueue(fmt.Sprintf("http://%s/p%d", host, j))
		}
	}
	gate := make(chan struct{})
	done := make(chan error)
	started := make(chan struct{}, 1)
	go func() {
		done <- h.run(1, func(tk *Task) Outcome {
			select {
			case started <- struct{}{}:
				<-gate
			default:
			}
			return Outcome{Result: Fetched, Robots: allowAll{}}
		})
	}()
	<-started
	ctx := context.Background()
	var all []KeyInfo
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		var err error
		if all, err = h.f.Keys(ctx, 1000); err != nil {
			t.Fatal(err)
		}
		if len(all) == 12 {
			break
		}
	}
	if len(all) != 12 {
		t.Fatalf("Keys: %d visit states, want 12", len(all))
	}
	for i := 1; i < len(all); i++ {
		a, b := all[i-1], all[i]
		if a.Queued < b.Queued || (a.Queued == b.Queued && a.Key > b.Key) {
			t.Fatalf("Keys out of order at %d: %s (%d) before %s (%d)", i, a.Key, a.Queued, b.Key, b.Queued)
		}
	}
	for _, limit := range []int{1, 3, 7} {
		top, err := h.f.Keys(ctx, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(top) != limit {
			t.Fatalf("Keys(%d): %d", limit, len(top))
		}
		for i := range top {
			if top[i].Key != all[i].Key || top[i].Queued != all[i].Queued {
				t.Errorf("Keys(%d)[%d] = %s (%d), want %s (%d)", limit, i, top[i].Key, top[i].Queued, all[i].Key, all[i].Queued)
			}
		}
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
