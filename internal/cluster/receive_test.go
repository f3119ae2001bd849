package cluster

import (
	"testing"
	"time"
)

// startEpochPair starts a and b, b recording the epoch it holds as it
// applies each batch, and waits until both are ready.
func startEpochPair(t *testing.T) (a, b *Node, hb *testHost) {
	t.Helper()
	ha := newTestHost()
	hb = newTestHost()
	a = mustNode(t, "a", nil, 2, ha)
	b = mustNode(t, "b", []string{a.cfg.Bind.String()}, 2, hb)
	waitReady(t, a, b)
	return a, b, hb
}

// routeReady routes one ready URL from n to the agent named to and
// flushes it.
func routeReady(t *testing.T, n *Node, to string) {
	t.Helper()
	if err := n.Route(to, KindReady, []byte("http://h1.test/p")); err != nil {
		t.Fatal(err)
	}
	if err := n.Flush(); err != nil {
		t.Fatal(err)
	}
}

// firstAppliedEpoch waits up to 10s for b to apply a batch and returns
// the epoch b held as it applied the first.
func firstAppliedEpoch(t *testing.T, b *Node, hb *testHost) uint64 {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); hb.count() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the batch was never applied; b holds %s", b.View())
		}
	}
	hb.mu.Lock()
	defer hb.mu.Unlock()
	return hb.epochs[0]
}

// A batch of ready URLs routed under a view its receiver has not
// installed is refused (503) until the receiver holds that view, then
// taken and applied under it: the sender's view here is one it installed
// ahead of the receiver (the receiver's watch has not brought it yet).
func TestReadyBatchAwaitsItsView(t *testing.T) {
	t.Parallel() // waits on leases and views more than it computes
	a, b, hb := startEpochPair(t)
	defer a.Close(100 * time.Millisecond)
	defer b.Close(100 * time.Millisecond)
	next, err := NextView(a.View(), []ViewAgent{{Name: "a", Weight: 2}})
	if err != nil {
		t.Fatal(err)
	}
	next.Epoch += 1000 // ahead of anything etcd writes during the test
	if err := a.installView(next); err != nil {
		t.Fatal(err)
	}
	routeReady(t, a, "b")
	for deadline := time.Now().Add(10 * time.Second); b.Status().ViewLagRefused < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("b refused the batch %d times in 10s; want it refused and sent again", b.Status().ViewLagRefused)
		}
	}
	if n := hb.count(); n != 0 {
		t.Fatalf("the batch was applied while b held %s, before the view %d it was routed under", b.View(), next.Epoch)
	}
	if err := b.installView(next); err != nil {
		t.Fatal(err)
	}
	if got := firstAppliedEpoch(t, b, hb); got < next.Epoch {
		t.Errorf("the batch routed under epoch %d was applied under epoch %d", next.Epoch, got)
	}
}
