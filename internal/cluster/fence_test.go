package cluster

import (
	"fmt"
	"maps"
	"net/http"
	"testing"

	"github.com/petrel-crawler/petrel/internal/sieve"
)

// TestFenceRefusesOlderViewBatch: c joins {a, b}; b has installed the view
// with c (it gave slots to c: its fence rises) while a still routes under
// the view without it. a's batch for b, routed under the older view, is
// refused (counted at b), kept by a, and routed again once a installs the
// newer view: the records that moved go to c, the others to b, and each
// is applied exactly once. A batch routed under the older view to an agent
// that lost nothing (c's view change gave a's slots away, not b's) would
// have been taken; here a batch of a's own routing under the new view is.
func TestFenceRefusesOlderViewBatch(t *testing.T) {
	net := newMemNetwork()
	ha, hb, hc := newTestHost(), newTestHost(), newTestHost()
	a, b, c := memNode(t, net, "a", ha), memNode(t, net, "b", hb), memNode(t, net, "c", hc)
	v1, err := NewView(10, []ViewAgent{{Name: "a"}, {Name: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	v2, err := NewView(20, []ViewAgent{{Name: "a"}, {Name: "b"}, {Name: "c"}})
	if err != nil {
		t.Fatal(err)
	}
	memInstall(t, v1, a, b)
	memInstall(t, v2, b, c)

	// a routes to b what b owns under v1; some of it c owns under v2.
	var toB, toC []string
	for i := 0; len(toB) < 50 || len(toC) < 50; i++ {
		r := fmt.Sprintf("h%d.test", i)
		if v1.Owner(r) != "b" {
			continue
		}
		if v2.Owner(r) == "c" {
			toC = append(toC, r)
		} else {
			toB = append(toB, r)
		}
		if err := a.Route("b", KindURLs, []byte(r)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	net.waitCalls(t, "the batch refused", func() bool { return net.countStatus("b", http.StatusConflict) >= 1 })
	if s := b.Status(); s.RefusedBatches != 1 || s.AppliedBatches != 0 {
		t.Fatalf("b refused %d batches for their view and applied %d; want 1, 0", s.RefusedBatches, s.AppliedBatches)
	}
	if ob, _ := a.OutboxLen(); ob != 1 {
		t.Fatalf("a's outbox holds %d batches, want the refused one", ob)
	}

	memInstall(t, v2, a) // a reads the newer view: the refused records go to their owners in it
	hb.waitApplied(t, "b applies its records", hb.has(len(toB)))
	hc.waitApplied(t, "c applies the moved records", hc.has(len(toC)))
	waitOutboxEmpty(t, a)
	appliedOnce(t, "b", hb, toB)
	appliedOnce(t, "c", hc, toC)
	if ha.count() != 0 {
		t.Errorf("a applied %d records, want none", ha.count())
	}
	if s := a.Status(); s.ReroutedBatches != 1 {
		t.Errorf("a routed %d refused batches again, want 1", s.ReroutedBatches)
	}
	if s, k := b.Status(), net.countStatus("b", http.StatusConflict); s.RefusedBatches != 1 || k != 1 {
		t.Errorf("b refused %d batches for their view, a saw %d refusals; want 1, 1 (not sent again under the older view; the records routed again are taken)", s.RefusedBatches, k)
	}
}

// TestFenceTakesBatchOfUnchangedOwner: a batch routed under an older view
// is taken by a receiver that lost nothing since (its records are its
// still); one it had received before its fence rose is acknowledged
// again, not refused.
func TestFenceTakesBatchOfUnchangedOwner(t *testing.T) {
	v1, _ := NewView(10, []ViewAgent{{Name: "a"}, {Name: "b"}})
	v2, _ := NewView(20, []ViewAgent{{Name: "a"}, {Name: "b"}, {Name: "c"}})
	v3, _ := NewView(30, []ViewAgent{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}})
	net := newMemNetwork()
	hb := newTestHost()
	b := memNode(t, net, "b", hb)
	memInstall(t, v1, b)
	old := &Batch{ID: BatchID{Sender: "a", Incarnation: 1, Seq: 1}, Kind: KindURLs, Epoch: v1.Epoch, Records: [][]byte{[]byte("x")}}
	wire, _ := old.Encode(nil, nil)
	if err := b.ReceiveBatch(wire); err != nil {
		t.Fatal(err)
	}
	memInstall(t, v2, b) // b gives slots to c: its fence is v2
	if err := b.ReceiveBatch(wire); err != nil {
		t.Fatalf("a batch received before the fence rose, sent again: %v, want acknowledged", err)
	}
	old.ID.Seq, old.Epoch = 2, v1.Epoch
	wire, _ = old.Encode(nil, nil)
	if se, ok := isStatus(b.ReceiveBatch(wire), http.StatusConflict); !ok || se.View != v2.Epoch {
		t.Fatalf("a batch of view %d after the fence %d: %v, want refused naming the fence", v1.Epoch, v2.Epoch, se)
	}
	// b loses more at v3 (to d); a batch of v2 is then older than the fence.
	memInstall(t, v3, b)
	old.ID.Seq, old.Epoch = 3, v2.Epoch
	wire, _ = old.Encode(nil, nil)
	if _, ok := isStatus(b.ReceiveBatch(wire), http.StatusConflict); !ok {
		t.Fatal("a batch of the view before b's latest loss was taken")
	}
	// A view that moves nothing away from b keeps the fence where it is.
	v4, _ := NewView(40, []ViewAgent{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d", Weight: 1}})
	memInstall(t, v4, b)
	old.ID.Seq, old.Epoch = 4, v3.Epoch
	wire, _ = old.Encode(nil, nil)
	if err := b.ReceiveBatch(wire); err != nil {
		t.Fatalf("a batch of view %d, b having lost nothing since: %v, want taken", v3.Epoch, err)
	}
	if s := b.Status(); s.RefusedBatches != 2 || s.Duplicates != 1 {
		t.Errorf("b refused %d, saw %d duplicates; want 2, 1", s.RefusedBatches, s.Duplicates)
	}
}

// TestBatchStampedWithRoutingView: a batch carries the view its first
// record was routed under, not the newer one in force when it is written
// to the outbox (the fence would take it for records that moved).
func TestBatchStampedWithRoutingView(t *testing.T) {
	net := newMemNetwork()
	a := memNode(t, net, "a", newTestHost())
	v1, _ := NewView(10, []ViewAgent{{Name: "a"}, {Name: "b"}})
	v2, _ := NewView(20, []ViewAgent{{Name: "a"}, {Name: "b"}, {Name: "c"}})
	memInstall(t, v1, a)
	net.setDown("b", true) // the batch stays in a's outbox
	if err := a.Route("b", KindURLs, []byte("h1.test")); err != nil {
		t.Fatal(err)
	}
	memInstall(t, v2, a)
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	es := a.outbox.Pending("b", 1, nil)
	if len(es) != 1 {
		t.Fatalf("a's outbox holds %d batches for b, want 1", len(es))
	}
	wire, err := a.outbox.Read(es[0])
	if err != nil {
		t.Fatal(err)
	}
	b, err := DecodeBatch(wire)
	if err != nil {
		t.Fatal(err)
	}
	if b.Epoch != v1.Epoch {
		t.Fatalf("batch stamped with epoch %d, want %d (the view its record was routed under)", b.Epoch, v1.Epoch)
	}
}

// TestFenceRefusesOlderViewHandoff: b joined {a} (a gives b slots at v1)
// and has since given some of them to c (v2: b's fence rises). a's part
// and release of v1, cut under v1, are refused by b (counted), and cut
// again once a holds v2: the counts of the slots b still owns go to b,
// those of the slots c owns now to c, each applied once; the release
// goes to b, which then awaits nothing. Taken as it came, the part would
// have left c's counts with b.
func TestFenceRefusesOlderViewHandoff(t *testing.T) {
	net := newMemNetwork()
	ha, hb, hc := newTestHost(), newTestHost(), newTestHost()
	a, b, c := memNode(t, net, "a", ha), memNode(t, net, "b", hb), memNode(t, net, "c", hc)
	v0, _ := NewView(10, []ViewAgent{{Name: "a"}})
	v1, _ := NewView(20, []ViewAgent{{Name: "a"}, {Name: "b"}})
	v2, _ := NewView(30, []ViewAgent{{Name: "a"}, {Name: "b"}, {Name: "c"}})
	memInstall(t, v0, a, b)
	memInstall(t, v1, a, b)
	memInstall(t, v2, b, c)
	if got := b.Awaiting(); got["a"] != v1.Epoch {
		t.Fatalf("b awaits %v, want a's release of %d", got, v1.Epoch)
	}

	// The counts of slots a gave b at v1: some stay b's at v2, some are c's.
	moved := Moves(v0, v1)["a"]["b"]
	counts, want := map[uint64]int64{}, map[string]map[uint64]int64{"b": {}, "c": {}}
	for s := uint32(0); s < Slots && (len(want["b"]) < 20 || len(want["c"]) < 20); s++ {
		if moved.Has(s) {
			k := uint64(s)<<(64-sieve.GroupBits) | 7
			counts[k] = int64(s%5 + 1)
			want[v2.OwnerOfSlot(s)][k] = counts[k]
		}
	}
	part := &Handoff{Epoch: v1.Epoch, Seq: 1, Counts: counts}
	sent := make(chan error, 1)
	go func() { sent <- a.SendHandoff(t.Context(), "b", part) }()
	net.waitCalls(t, "the part refused", func() bool { return net.countStatus("b", http.StatusConflict) >= 1 })
	if s := b.Status(); s.RefusedParts != 1 || len(hb.appliedCounts()) != 0 {
		t.Fatalf("b refused %d parts for their view and applied %d counts; want 1, 0", s.RefusedParts, len(hb.appliedCounts()))
	}

	memInstall(t, v2, a) // a reads v2: the part is cut again under it
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if got := hb.appliedCounts(); !maps.Equal(got, want["b"]) {
		t.Errorf("b applied counts of %d keys, want the %d of its slots at v2", len(got), len(want["b"]))
	}
	if got := hc.appliedCounts(); !maps.Equal(got, want["c"]) {
		t.Errorf("c applied counts of %d keys, want the %d of the slots it took from b at v2", len(got), len(want["c"]))
	}

	// The release of v1, cut under v1, is refused too and sent again under v2.
	rel := &Handoff{Epoch: v1.Epoch, Seq: 2, Release: true}
	if err := a.SendHandoff(t.Context(), "b", rel); err != nil {
		t.Fatal(err)
	}
	if got := b.Awaiting(); len(got) != 0 {
		t.Errorf("b awaits %v after a's release, want nothing", got)
	}
	if s := b.Status(); s.RefusedParts != 1 || s.RefusedReleases != 1 {
		t.Errorf("b refused %d parts and %d releases for their view, want 1, 1", s.RefusedParts, s.RefusedReleases)
	}
	if s := a.Status(); s.Recut != 2 {
		t.Errorf("a cut %d refused parts again, want 2", s.Recut)
	}

	// Over HTTP: a part of v1 cut under v1 is answered 409; cut under v2
	// (the view travels in the part's header), it is taken.
	stale := &Handoff{From: "d", Epoch: v1.Epoch, Seq: 1, Counts: map[uint64]int64{1: 1}}
	if code := postPart(t, b, stale); code != http.StatusConflict {
		t.Errorf("a part cut under v1 posted to b: %d, want 409", code)
	}
	stale.View = v2.Epoch
	if code := postPart(t, b, stale); code != http.StatusOK {
		t.Errorf("a part of v1 cut under v2 posted to b: %d, want 200", code)
	}
}

// appliedCounts returns a copy of the counts the hand-off parts applied.
func (h *testHost) appliedCounts() map[uint64]int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.counts)
}
