package cluster

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestBackPressureSlowsTheSender holds a receiver's applier and lets its
// small inbox fill: the receiver stops acknowledging, the sender's outbox
// stays within its bound and the routing call (what the frontier's
// parsers call) waits instead of dropping or buffering. Released (applied,
// and the inbox trimmed as checkpoints do), every record arrives exactly
// once.
func TestBackPressureSlowsTheSender(t *testing.T) {
	t.Parallel() // waits on leases and views more than it computes
	const (
		outboxBytes = 16 << 10
		inboxBytes  = 32 << 10
		records     = 2400
	)
	small := func(c *Config) {
		c.BatchURLs, c.OutboxBytes, c.InboxBytes = 32, outboxBytes, inboxBytes
	}
	ha, hb := newTestHost(), newTestHost()
	ha.busy.Store(true)
	a, err := startNode(t, "a", testKey, nil, 2, ha, [][2]string{{"assign", "authority"}}, small)
	if err != nil {
		t.Fatal(err)
	}
	b, err := startNode(t, "b", testKey, []string{a.cfg.Bind.String()}, 2, hb, [][2]string{{"assign", "authority"}}, small)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(time.Second)
	defer b.Close(time.Second)
	waitReady(t, a, b)

	b.PauseApply() // the owner is slow: nothing it receives is applied
	held := true
	defer func() { // a failure while held: let Close save the applier's state
		if held {
			b.ResumeApply()
		}
	}()
	routed := make(chan error, 1)
	go func() {
		for i := range records {
			// Random hex so that batches do not compress to nothing.
			rec := fmt.Appendf(nil, "http://h%d.test/p%d/%016x%016x", i%97, i, rand.Uint64(), rand.Uint64())
			if err := a.Route("b", KindURLs, rec); err != nil {
				routed <- err
				return
			}
		}
		routed <- a.Flush()
	}()

	pollUntil(t, 20*time.Second, "b's inbox full", func() bool { return b.Status().InboxFull > 0 })
	// Let the sender's last attempts settle, then watch: no more
	// acknowledgements, bounded outbox and inbox, the router waiting.
	time.Sleep(300 * time.Millisecond)
	accepted, sent := b.counts.inboxBatches.Load(), a.batch.routed.Load()
	for range 40 {
		time.Sleep(25 * time.Millisecond)
		if _, bytes := a.OutboxLen(); bytes > outboxBytes {
			t.Fatalf("a's outbox holds %d bytes for b, over its bound %d", bytes, outboxBytes)
		}
		if s := b.inbox.Size(); s > inboxBytes {
			t.Fatalf("b's inbox holds %d bytes, over its bound %d", s, inboxBytes)
		}
		if got := b.counts.inboxBatches.Load(); got != accepted {
			t.Fatalf("b accepted %d batches after %d while full", got, accepted)
		}
		select {
		case err := <-routed:
			t.Fatalf("routing returned (%v) while the owner's inbox is full", err)
		default:
		}
	}
	if got := a.batch.routed.Load(); got != sent || got >= records {
		t.Fatalf("records routed moved from %d to %d (of %d) while the owner was full", sent, got, records)
	}
	if ob, _ := a.OutboxLen(); ob == 0 {
		t.Fatal("a's outbox is empty while b refuses batches")
	}
	if hb.count() != 0 {
		t.Fatalf("b applied %d records while held", hb.count())
	}
	t.Logf("held: %d of %d records routed, outbox %d batches, b's inbox %d bytes, %d refusals as full",
		sent, records, first(a.OutboxLen()), b.inbox.Size(), b.Status().InboxFull)

	b.ResumeApply()
	held = false
	stop := make(chan struct{})
	trimmed := make(chan struct{})
	go func() { // checkpoints: what is applied is trimmed from the inbox
		defer close(trimmed)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			b.PauseApply()
			st, err := b.CheckpointState()
			b.ResumeApply()
			if err == nil {
				err = b.TrimInbox(st)
			}
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { close(stop); <-trimmed }()
	select {
	case err := <-routed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("routing still blocked after the release; status %+v", a.Status())
	}
	pollUntil(t, 60*time.Second, "every record applied", func() bool { return hb.count() == records })
	hb.mu.Lock()
	defer hb.mu.Unlock()
	for r, c := range hb.records {
		if c != 1 {
			t.Fatalf("%s applied %d times", r, c)
		}
	}
}

func first(n int, _ int64) int { return n }

// pollUntil polls cond every 10 ms until it holds, failing after limit.
func pollUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s", what, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
