package cluster

import (
	"fmt"
	"net/http"
	"testing"
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
	if s := b.Status(); s.StaleRefused != 1 || s.AppliedBatches != 0 {
		t.Fatalf("b refused %d batches for their view and applied %d; want 1, 0", s.StaleRefused, s.AppliedBatches)
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
	if s := a.Status(); s.StaleRerouted != 1 {
		t.Errorf("a routed %d refused batches again, want 1", s.StaleRerouted)
	}
	if s, k := b.Status(), net.countStatus("b", http.StatusConflict); s.StaleRefused != 1 || k != 1 {
		t.Errorf("b refused %d batches for their view, a saw %d refusals; want 1, 1 (not sent again under the older view; the records routed again are taken)", s.StaleRefused, k)
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
	if s := b.Status(); s.StaleRefused != 2 || s.Duplicates != 1 {
		t.Errorf("b refused %d, saw %d duplicates; want 2, 1", s.StaleRefused, s.Duplicates)
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
