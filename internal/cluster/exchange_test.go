package cluster

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"
	"time"
)

// The exchange's protocol on the in-memory transport (memtransport_test.go):
// no socket, no etcd, no sleep; the tests wait for calls and applies.

// memPair starts a and b on one network, both holding the view {a, b}.
func memPair(t *testing.T, opts ...func(*Config)) (net *memNetwork, a, b *Node, ha, hb *testHost) {
	t.Helper()
	net = newMemNetwork()
	ha, hb = newTestHost(), newTestHost()
	a = memNode(t, net, "a", ha, opts...)
	b = memNode(t, net, "b", hb, opts...)
	v, err := NewView(10, []ViewAgent{{Name: "a"}, {Name: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	memInstall(t, v, a, b)
	return net, a, b, ha, hb
}

// routeN routes n records from a to b, in order, and flushes them; it
// returns them.
func routeN(t *testing.T, a *Node, to string, n int, tag string) []string {
	t.Helper()
	recs := make([]string, n)
	for i := range recs {
		recs[i] = fmt.Sprintf("http://h%d.test/%s/%d", i%31, tag, i)
		if err := a.Route(to, KindURLs, []byte(recs[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	return recs
}

// waitOutboxEmpty blocks until n's outbox holds nothing.
func waitOutboxEmpty(t *testing.T, n *Node) {
	t.Helper()
	waitChanged(t, n.Name()+"'s outbox empty", n.outbox.Changed, func() bool { b, _ := n.outbox.Len(); return b == 0 })
}

func (h *testHost) has(n int) func() bool { return func() bool { return h.count() >= n } }

// TestMemExchangeDeliversInOrder: every record routed is applied once by
// its receiver, in the order routed (one batch in flight at a time), and
// the sender's outbox empties: a batch leaves it only once acknowledged.
func TestMemExchangeDeliversInOrder(t *testing.T) {
	_, a, b, _, hb := memPair(t, func(c *Config) { c.Window, c.BatchURLs = 1, 100 })
	recs := routeN(t, a, "b", 5000, "p")
	hb.waitApplied(t, "every record applied", hb.has(len(recs)))
	appliedOnce(t, "b", hb, recs)
	hb.mu.Lock()
	if !slices.Equal(hb.order, recs) {
		t.Errorf("b applied the records in another order than routed")
	}
	hb.mu.Unlock()
	waitOutboxEmpty(t, a)
	if s := a.Status(); s.SentBatches != 50 || s.SentURLs != 5000 {
		t.Errorf("a sent %d batches of %d URLs, want 50 of 5000", s.SentBatches, s.SentURLs)
	}
	// The host has every record a moment before the applier counts its
	// last batch.
	waitChanged(t, "b's applied batches counted", b.appliedMoved.Wait, func() bool { return b.Status().AppliedBatches >= 50 })
	if s := b.Status(); s.AppliedBatches != 50 || s.Duplicates != 0 {
		t.Errorf("b applied %d batches, %d duplicates; want 50, 0", s.AppliedBatches, s.Duplicates)
	}
}

// TestMemExchangeLostAckAppliedOnce: a batch whose acknowledgement is lost
// is sent again and applied once — also when its receiver crashes after
// the fsync and before the answer, and replays its inbox at its restart.
func TestMemExchangeLostAckAppliedOnce(t *testing.T) {
	net, a, b, _, hb := memPair(t)
	net.loseNextAcks("b", 1, false)
	recs := routeN(t, a, "b", 300, "lost")
	hb.waitApplied(t, "every record applied", hb.has(len(recs)))
	waitOutboxEmpty(t, a)
	appliedOnce(t, "b", hb, recs)
	if lost, dup := net.count("b", errAckLost), b.Status().Duplicates; lost != 1 || dup != 1 {
		t.Fatalf("%d answers lost, b saw %d duplicates; want 1, 1", lost, dup)
	}

	// The receiver crashes after its fsync: its frontier's state is lost
	// with it (a fresh host), its inbox is not.
	net.loseNextAcks("b", 1, true)
	recs = routeN(t, a, "b", 300, "crash")
	net.waitCalls(t, "an answer lost", func() bool { return net.count("b", errAckLost) == 2 })
	b.closeParts()
	hb2 := newTestHost()
	b2 := memNode(t, net, "b", hb2, func(c *Config) { c.Dir = b.cfg.Dir })
	memInstall(t, b.View(), b2)
	net.setDown("b", false)
	waitOutboxEmpty(t, a)
	hb2.waitApplied(t, "every record applied after the restart", hb2.has(len(recs)+300))
	hb2.mu.Lock()
	for _, r := range recs {
		if c := hb2.records[r]; c != 1 {
			t.Errorf("%s applied %d times after the restart, want once", r, c)
		}
	}
	hb2.mu.Unlock()
	if dup := b2.Status().Duplicates; dup != 1 {
		t.Errorf("the restarted b saw %d duplicates, want 1 (the batch sent again)", dup)
	}
}

// TestMemExchangePeerDownAndBack: while the receiver is unreachable the
// sender keeps its batches and tries again; once it is back, each record
// is applied once.
func TestMemExchangePeerDownAndBack(t *testing.T) {
	net, a, _, _, hb := memPair(t)
	net.setDown("b", true)
	recs := routeN(t, a, "b", 1000, "down")
	net.waitCalls(t, "three failed sends", func() bool { return net.count("b", errUnreachable) >= 3 })
	if hb.count() != 0 {
		t.Fatalf("b applied %d records while unreachable", hb.count())
	}
	if ob, _ := a.OutboxLen(); ob == 0 {
		t.Fatal("a's outbox is empty while b is unreachable")
	}
	net.setDown("b", false)
	hb.waitApplied(t, "every record applied", hb.has(len(recs)))
	waitOutboxEmpty(t, a)
	appliedOnce(t, "b", hb, recs)
	if e := a.Status().SendErrors; e < 3 {
		t.Errorf("a counted %d send errors, want 3 or more", e)
	}
}

// TestMemBackPressureSlowsTheSender holds a receiver's applier and lets its
// small inbox fill: the receiver answers 503 instead of acknowledging, the
// sender's outbox stays within its bound and the routing call (what the
// frontier's parsers call) waits instead of dropping or buffering.
// Released (applied, and the inbox trimmed as checkpoints do), every
// record arrives exactly once.
func TestMemBackPressureSlowsTheSender(t *testing.T) {
	t.Parallel() // waits out the receiver's Retry-After more than it computes
	const (
		outboxBytes = 16 << 10
		inboxBytes  = 32 << 10
		records     = 2400
	)
	net, a, b, _, hb := memPair(t, func(c *Config) {
		c.BatchURLs, c.OutboxBytes, c.InboxBytes = 32, outboxBytes, inboxBytes
	})
	b.PauseApply() // the owner is slow: nothing it receives is applied
	held := true
	defer func() { // a failure while held: let the close take the applier's lock
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
	net.waitCalls(t, "b's inbox full", func() bool { return b.Status().InboxFull > 0 })
	// Let the sender's last attempts settle (a dozen more answers), then
	// watch a dozen more: all 503, bounded outbox and inbox, the router
	// waiting.
	busyAt := net.countStatus("b", http.StatusServiceUnavailable)
	net.waitCalls(t, "a dozen more refusals", func() bool { return net.countStatus("b", http.StatusServiceUnavailable) >= busyAt+12 })
	accepted, sent := b.counts.inboxBatches.Load(), a.batch.routed.Load()
	busyAt = net.countStatus("b", http.StatusServiceUnavailable)
	net.waitCalls(t, "a dozen more refusals", func() bool {
		if _, bytes := a.OutboxLen(); bytes > outboxBytes {
			t.Fatalf("a's outbox holds %d bytes for b, over its bound %d", bytes, outboxBytes)
		}
		if s := b.inbox.Size(); s > inboxBytes {
			t.Fatalf("b's inbox holds %d bytes, over its bound %d", s, inboxBytes)
		}
		return net.countStatus("b", http.StatusServiceUnavailable) >= busyAt+12
	})
	if got := b.counts.inboxBatches.Load(); got != accepted {
		t.Fatalf("b accepted %d batches after %d while full", got, accepted)
	}
	select {
	case err := <-routed:
		t.Fatalf("routing returned (%v) while the owner's inbox is full", err)
	default:
	}
	if got := a.batch.routed.Load(); got != sent || got >= records {
		t.Fatalf("records routed moved from %d to %d (of %d) while the owner was full", sent, got, records)
	}
	if hb.count() != 0 {
		t.Fatalf("b applied %d records while held", hb.count())
	}

	b.ResumeApply()
	held = false
	done := make(chan struct{})
	trimmed := make(chan struct{})
	go func() { // a checkpoint after each apply: what is applied is trimmed
		defer close(trimmed)
		for {
			hb.mu.Lock()
			ch := hb.applied // an apply from here on wakes the next round
			hb.mu.Unlock()
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
			select {
			case <-done:
				return
			case <-ch:
			}
		}
	}()
	defer func() { close(done); <-trimmed }()
	select {
	case err := <-routed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("routing still blocked after the release; status %+v", a.Status())
	}
	hb.waitApplied(t, "every record applied", hb.has(records))
	hb.mu.Lock()
	defer hb.mu.Unlock()
	for r, c := range hb.records {
		if c != 1 {
			t.Fatalf("%s applied %d times", r, c)
		}
	}
}
