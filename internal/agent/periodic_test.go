package agent

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/clock"
)

// TestCheckpointTimesOnManualClock drives the checkpoint loop on a clock
// moved by hand: a checkpoint at the start, one each interval exactly, a
// new interval counted from its change, one on request with its error
// returned, none once the interval is 0.
func TestCheckpointTimesOnManualClock(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewManual(start)
	ctx, cancel := context.WithCancel(context.Background())
	every, requests := make(chan time.Duration), make(chan chan error)
	taken := make(chan time.Duration, 16)
	fail := errors.New("disk full")
	var failNext atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		checkpointTimes(ctx, clk, 100*time.Millisecond, every, requests, func() error {
			taken <- clk.Now().Sub(start)
			if failNext.Load() {
				return fail
			}
			return nil
		})
	}()
	expect := func(want time.Duration) {
		t.Helper()
		select {
		case got := <-taken:
			if got != want {
				t.Fatalf("checkpoint at %v, want %v", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no checkpoint, want one at %v", want)
		}
	}
	none := func() {
		t.Helper()
		select {
		case got := <-taken:
			t.Fatalf("checkpoint at %v, want none", got)
		default:
		}
	}
	// armed waits until the loop's timer is due at the clock's time + d.
	armed := func(d time.Duration) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if at, ok := clk.Next(); ok && at.Equal(clk.Now().Add(d)) {
				return
			}
		}
		t.Fatalf("the loop's timer is not due %v from now", d)
	}

	expect(0)
	armed(100 * time.Millisecond)
	clk.Advance(99 * time.Millisecond)
	none()
	clk.Advance(time.Millisecond)
	expect(100 * time.Millisecond)
	armed(100 * time.Millisecond)
	clk.Advance(100 * time.Millisecond)
	expect(200 * time.Millisecond)

	// A new interval counts from its change (at 230ms).
	armed(100 * time.Millisecond)
	clk.Advance(30 * time.Millisecond)
	every <- 250 * time.Millisecond
	armed(250 * time.Millisecond)
	clk.Advance(249 * time.Millisecond)
	none()
	clk.Advance(time.Millisecond)
	expect(480 * time.Millisecond)

	// A request is answered at once, with the checkpoint's error.
	failNext.Store(true)
	reply := make(chan error, 1)
	requests <- reply
	expect(480 * time.Millisecond)
	if err := <-reply; err != fail {
		t.Errorf("request answered %v, want %v", err, fail)
	}
	failNext.Store(false)

	// Interval 0: only on request.
	armed(250 * time.Millisecond)
	every <- 0
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, ok := clk.Next(); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the loop's timer is still armed after interval 0")
		}
	}
	clk.Advance(time.Hour)
	none()
	requests <- nil
	expect(480*time.Millisecond + time.Hour)
	cancel()
	<-done
}
