package clock

import (
	"context"
	"testing"
	"time"
)

// TestEvery: f is called every d, not at once, and never again once ctx
// is done; Every returns then.
func TestEvery(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := make(chan time.Time, 100)
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, 20*time.Millisecond, func() { calls <- time.Now() })
	}()
	first := <-calls
	if d := first.Sub(start); d < 20*time.Millisecond {
		t.Errorf("first call %v after the start, want one interval", d)
	}
	<-calls
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Every did not return after ctx ended")
	}
	n := len(calls)
	time.Sleep(60 * time.Millisecond)
	if len(calls) != n {
		t.Error("f called after Every returned")
	}
}
