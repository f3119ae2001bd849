package cluster

import (
	"fmt"
	"net/netip"
	"sync"
	"testing"
)

// TestPlacementsKeepFirst: a host stays at the address it was first
// placed at, whatever is offered later, from any goroutine.
func TestPlacementsKeepFirst(t *testing.T) {
	p := NewPlacements(0)
	first, later := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	if _, ok := p.Get("a.test"); ok {
		t.Fatal("an empty Placements knows a.test")
	}
	if got := p.Keep("a.test", first); got != first {
		t.Fatalf("Keep = %v, want %v", got, first)
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got := p.Keep("a.test", later); got != first {
				t.Errorf("Keep after a move = %v, want the first placement %v", got, first)
			}
		}()
	}
	wg.Wait()
	if got, ok := p.Get("a.test"); !ok || got != first {
		t.Errorf("Get = %v %v, want %v", got, ok, first)
	}
	if p.Len() != 1 || p.Evicted() != 0 {
		t.Errorf("Len %d, Evicted %d; want 1, 0", p.Len(), p.Evicted())
	}
}

// TestPlacementsBounded: past its bound a Placements forgets one host per
// new one, counted, and never holds more.
func TestPlacementsBounded(t *testing.T) {
	const max = 100
	p := NewPlacements(max)
	a := netip.MustParseAddr("10.0.0.1")
	for i := 0; i < 3*max; i++ {
		p.Keep(fmt.Sprintf("h%d.test", i), a)
		if p.Len() > max {
			t.Fatalf("%d hosts kept, bound %d", p.Len(), max)
		}
	}
	if p.Len() != max || p.Evicted() != 2*max {
		t.Errorf("Len %d, Evicted %d; want %d, %d", p.Len(), p.Evicted(), max, 2*max)
	}
	if got, ok := p.Get(fmt.Sprintf("h%d.test", 3*max-1)); !ok || got != a {
		t.Errorf("the last host placed is not kept: %v %v", got, ok)
	}
}
