package cluster

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// holdHost records the holds a restarted agent resumes and the epochs
// whose holds it is told to end.
type holdHost struct {
	*rerouteHost
	mu      sync.Mutex
	resumed []PendingHold
	dropped []uint64
}

func (h *holdHost) ResumeHolds(holds []PendingHold, _ map[string]time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.resumed = append(h.resumed, holds...)
}

func (h *holdHost) DropHolds(epoch uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dropped = append(h.dropped, epoch)
}

// TestOrphanViewPassed restarts an agent whose directory holds a view of
// epoch 2 that nobody else holds, with the hand-off state its install
// recorded (releases awaited, moves held, a hand-off to give), after the
// others agreed another view of epoch 2 (the takeover of its keys) and a
// view of epoch 3 after it. Before installing a newer view it learns from
// them that its own was never agreed: what that view made it await, hold
// and give is dropped, its host's holds of that epoch end, and it is
// brought back.
func TestOrphanViewPassed(t *testing.T) {
	const grace = time.Second
	a, b, c, _, _, _ := startGracedThree(t, grace)
	defer a.Close(100 * time.Millisecond)
	defer b.Close(100 * time.Millisecond)
	cfg, v1, taken := killTakenOver(t, a, b, c)
	v3, err := NextView(taken, []ViewAgent{{Name: "b", Weight: 2}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.ProposeView(ctx, v3, "b weighs twice"); err != nil {
		t.Fatal(err)
	}
	waitEpoch(t, 3, 10*time.Second, b)
	agreed := b.View()

	// c's directory: the orphan view of epoch 2 as its install left it.
	orphan, pre := writeOrphanView(t, cfg.Dir, v1, []ViewAgent{{Name: "a", Weight: 3}, {Name: "c", Weight: 2}})
	st := pre.ho.st
	if len(st.Giving) != 1 || st.Awaiting["b"] != orphan.Epoch || !slices.ContainsFunc(st.Holds, func(m heldMove) bool { return m.Epoch == orphan.Epoch }) {
		t.Fatalf("the orphan view's hand-off state: giving %v, awaiting %v, holds %v", st.Giving, st.Awaiting, st.Holds)
	}

	h := &holdHost{rerouteHost: &rerouteHost{testHost: newTestHost()}}
	c2, err := Start(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	h.node = c2
	t.Cleanup(func() { c2.Close(100 * time.Millisecond) })
	h.mu.Lock()
	resumed := len(h.resumed)
	h.mu.Unlock()
	if resumed == 0 {
		t.Fatal("the restarted agent resumed no hold of its view")
	}
	waitEpoch(t, agreed.Epoch, 15*time.Second, c2)
	c2.ho.mu.Lock()
	for from, e := range c2.ho.st.Awaiting {
		if e == orphan.Epoch {
			t.Errorf("a release of the orphan view from %s is still awaited", from)
		}
	}
	for _, m := range slices.Concat(c2.ho.st.Holds, c2.ho.st.Giving) {
		if m.Epoch == orphan.Epoch {
			t.Errorf("a move of the orphan view is still held or to be given: %v", m)
		}
	}
	c2.ho.mu.Unlock()
	h.mu.Lock()
	if !slices.Contains(h.dropped, orphan.Epoch) {
		t.Errorf("the host's holds of epoch %d were not ended (ended: %v)", orphan.Epoch, h.dropped)
	}
	h.mu.Unlock()
	back := awaitReturn(t, c2, agreed)
	waitEpoch(t, back.Epoch, 10*time.Second, a)
	if !sameView(back, a.View()) {
		t.Errorf("c's guard opened under %s; a holds %s", back, a.View())
	}
}
