package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/clock"
)

// TestGuardTiming follows the guard on an injected clock: open while
// rounds come within G/2, closed from the first moment past it (whether a
// fetcher asks first or a late round arrives first), latched until it is
// opened again, and cutting the requests in flight when it closes.
func TestGuardTiming(t *testing.T) {
	const half = 500 * time.Millisecond
	clk := clock.NewManual(time.Unix(1000, 0))
	var closes []string
	g := newGuard(half, clk.Now, func() bool { return true }, func(r string) { closes = append(closes, r) })

	for i := 0; i < 10; i++ { // rounds every 400ms: always open
		clk.Advance(400 * time.Millisecond)
		g.Round()
		if !g.Allowed() {
			t.Fatalf("closed after a round %s after the last: %s", 400*time.Millisecond, g.Reason())
		}
	}
	ctx, done := g.Context(context.Background())
	defer done()

	// A silence just within G/2 is allowed; one tick past it is not, even
	// though nothing ran in between (a process stopped and resumed).
	clk.Advance(half)
	if !g.Allowed() {
		t.Fatal("closed at exactly G/2")
	}
	clk.Advance(time.Millisecond)
	if g.Allowed() {
		t.Fatal("allowed past G/2 without a round")
	}
	select {
	case <-ctx.Done():
	case <-time.After(2 * time.Second):
		t.Error("a request in flight was not cut when the guard closed")
	}
	// Latched: fresh rounds do not open it.
	for i := 0; i < 5; i++ {
		clk.Advance(100 * time.Millisecond)
		g.Round()
	}
	if g.Allowed() {
		t.Fatal("rounds after a silence reopened the guard by themselves")
	}
	if !g.roundSinceClose() {
		t.Error("rounds after the close not seen")
	}
	if len(closes) != 1 {
		t.Errorf("onClose called %d times, want 1: %q", len(closes), closes)
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

	// The silence is caught by the late round itself when no fetcher
	// asked during it (kill -STOP, then -CONT: the first thing to run is
	// memberlist's next probe).
	clk.Advance(2 * half)
	g.Round()
	if g.Allowed() {
		t.Fatal("a round after a silence of G hid the silence")
	}

	// WaitOpen blocks while closed and returns when opened.
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

// TestGuardInactiveAlone: an agent alone in its view is not guarded by
// the rounds (there is nobody to probe).
func TestGuardInactiveAlone(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	g := newGuard(time.Second, clk.Now, func() bool { return false }, nil)
	clk.Advance(time.Hour)
	g.Round()
	if !g.Allowed() {
		t.Fatalf("an agent alone closed its guard: %s", g.Reason())
	}
}

func TestGraceBound(t *testing.T) {
	tm := Timing{Probe: time.Second}
	if got, want := GraceBound(tm, 3, 30*time.Second, 30*time.Second), 85500*time.Millisecond; got != want {
		t.Errorf("default G for 3 agents = %s, want %s", got, want)
	}
	if _, err := ResolveGrace(10*time.Second, tm, 3, 30*time.Second, 30*time.Second); err == nil {
		t.Error("a grace period below the bound was accepted")
	}
	if g, err := ResolveGrace(0, tm, 3, time.Second, time.Second); err != nil || g != GraceBound(tm, 3, time.Second, time.Second) {
		t.Errorf("ResolveGrace(0) = %s, %v", g, err)
	}
}

// TestGuardWaitsForPromisePastTTL: a closed guard does not open while a
// member holds a promise of a newer view that it has neither installed
// nor seen aborted, even past promiseTTL (its proposer may have installed
// the view — a takeover of this agent's keys — and the commit be on its
// way); past promiseHold the promise no longer counts.
func TestGuardWaitsForPromisePastTTL(t *testing.T) {
	a := mustNode(t, "a", nil, 3, newTestHost())
	b := mustNode(t, "b", []string{a.cfg.Bind.String()}, 3, newTestHost())
	c := mustNode(t, "c", []string{a.cfg.Bind.String()}, 3, newTestHost())
	defer func() {
		for _, n := range []*Node{a, b, c} {
			n.Close(100 * time.Millisecond)
		}
	}()
	waitReady(t, a, b, c)
	for deadline := time.Now().Add(10 * time.Second); !c.guard.Allowed(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("c's guard never opened: %s", c.guard.Reason())
		}
	}
	next, err := NextView(c.View(), nil, "c")
	if err != nil {
		t.Fatal(err)
	}
	withAbsent(next, []string{"c"})
	if !b.promise(next) {
		t.Fatal("b refused to promise")
	}
	promisedAgo := func(d time.Duration) {
		b.vc.promiseMu.Lock()
		b.vc.promisedT = time.Now().Add(-d)
		b.vc.promiseMu.Unlock()
	}
	promisedAgo(promiseTTL + time.Second)
	c.guard.Close("test: cut off")
	time.Sleep(time.Second) // rounds complete; the zombie loop asks a and b every 50 ms
	if c.guard.Allowed() {
		t.Fatalf("c's guard opened while b held a promise of %s, %s old, neither installed nor aborted", next, promiseTTL+time.Second)
	}
	promisedAgo(promiseHold + time.Second)
	for deadline := time.Now().Add(5 * time.Second); !c.guard.Allowed(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("c's guard still closed past promiseHold: %s", c.guard.Reason())
		}
	}
	promisedAgo(0)
	if b.promisedEpoch() != next.Epoch {
		t.Fatalf("b reports promised epoch %d, want %d", b.promisedEpoch(), next.Epoch)
	}
	b.unpromise(next)
	if e := b.promisedEpoch(); e != 0 {
		t.Errorf("b reports promised epoch %d after the abort, want 0", e)
	}
}
