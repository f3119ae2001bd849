package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/clock"
)

// TestGuardTiming follows the guard on an injected clock with a fence
// that holds until a time: open while the fence holds, closed from the
// first moment past it even though nothing ran in between (a process
// stopped and resumed), latched until it is opened again, and cutting
// the requests in flight when it closes.
func TestGuardTiming(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	fence := clk.Now().Add(time.Second)
	live := func(at time.Time) bool { return at.Before(fence) }
	var closes []string
	g := newGuard(clk.Now, live, func(r string) { closes = append(closes, r) })
	ctx, done := g.Context(context.Background())
	defer done()
	clk.Advance(999 * time.Millisecond)
	if !g.Allowed() {
		t.Fatal("closed before the fence")
	}
	clk.Advance(time.Millisecond)
	if g.Allowed() {
		t.Fatal("allowed at the fence")
	}
	select {
	case <-ctx.Done():
	case <-time.After(2 * time.Second):
		t.Error("a request in flight was not cut when the guard closed")
	}
	// Latched: a renewed fence does not open it by itself.
	fence = clk.Now().Add(time.Minute)
	if g.Allowed() {
		t.Fatal("a renewed lease reopened the guard by itself")
	}
	if len(closes) != 1 || closes[0] != fenceClosed {
		t.Errorf("onClose calls %q, want one: %q", closes, fenceClosed)
	}
	g.open()
	if !g.Allowed() {
		t.Fatalf("closed after open: %s", g.Reason())
	}
	if ctx2, done2 := g.Context(context.Background()); ctx2.Err() != nil {
		t.Error("a request after open starts cut")
	} else {
		done2()
	}
	// WaitOpen blocks while closed and returns when opened.
	g.Close("test")
	waited := make(chan error, 1)
	go func() { waited <- g.WaitOpen(context.Background()) }()
	select {
	case <-waited:
		t.Fatal("WaitOpen returned while closed")
	case <-time.After(20 * time.Millisecond):
	}
	g.open()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("WaitOpen did not return after open")
	}
}
