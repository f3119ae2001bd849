package cluster

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestRouteAllCutsBatches: records routed a slice at a time (RouteAll),
// from two goroutines and with slices that straddle the batches' limit,
// all arrive exactly once, in batches of at most BatchURLs records.
func TestRouteAllCutsBatches(t *testing.T) {
	t.Parallel() // waits on leases and views more than it computes
	ha, hb := newTestHost(), newTestHost()
	small := func(c *Config) { c.BatchURLs = 100 }
	settings := [][2]string{{"assign", "authority"}}
	a, err := startNode(t, "a", testKey, nil, 2, ha, settings, small)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(time.Second)
	b, err := startNode(t, "b", testKey, []string{a.cfg.Bind.String()}, 2, hb, settings, small)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(time.Second)
	waitReady(t, a, b)
	const n, chunk = 5_000, 37
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			var recs [][]byte
			for i := w; i < n; i += 2 {
				recs = append(recs, fmt.Appendf(nil, "http://h%d.test/p%d", i%97, i))
				if len(recs) == chunk || i+2 >= n {
					if err := a.RouteAll("b", KindURLs, recs); err != nil {
						t.Error(err)
						return
					}
					recs = nil
				}
			}
		})
	}
	wg.Wait()
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for hb.count() < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := hb.count(); got != n {
		t.Fatalf("b applied %d distinct records, want %d", got, n)
	}
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if hb.largest > 100 {
		t.Errorf("a batch of %d records, over BatchURLs (100)", hb.largest)
	}
	for r, c := range hb.records {
		if c != 1 {
			t.Fatalf("%s applied %d times", r, c)
		}
	}
}
