package cluster

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// releaseHost is a testHost that, as an old owner, releases at once what a
// view change moves from it.
type releaseHost struct {
	*testHost
	node atomic.Pointer[Node]
}

func (h *releaseHost) ViewChanged(old, new *View) {
	n := h.node.Load()
	for to := range Moves(old, new)[n.Name()] {
		go n.SendHandoff(context.Background(), to, &Handoff{Epoch: new.Epoch, Seq: 1, Release: true})
	}
}

// exitOnFinish closes n as an agent does once its crawl is over (after
// any proposal of its own has ended).
func exitOnFinish(n *Node) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-n.Finished()
		n.vc.proposeMu.Lock()
		n.vc.proposeMu.Unlock()
		n.Close(100 * time.Millisecond)
	}()
	return done
}

// TestJoinGrantedAtTheEnd: the crawl's agents become idle while the
// coordinator grants a join (between the phases of the view that adds the
// joining agent). The end is not decided under that proposal: the agent
// joined is in the view whose end is detected, and learns it before the
// others exit.
func TestJoinGrantedAtTheEnd(t *testing.T) {
	ha, hb, hc := &releaseHost{testHost: newTestHost()}, &releaseHost{testHost: newTestHost()}, newHandoffHost()
	ha.busy.Store(true)
	a := mustNode(t, "a", nil, 2, ha)
	ha.node.Store(a)
	b := mustNode(t, "b", []string{a.cfg.Bind.String()}, 2, hb)
	hb.node.Store(b)
	waitReady(t, a, b)
	a.vc.proposeMu.Lock()
	a.vc.beforeCommit = func() error {
		// a and b are idle from here on: waves run while the join is
		// being granted.
		ha.busy.Store(false)
		select {
		case <-a.Finished():
		case <-time.After(1500 * time.Millisecond):
		}
		return nil
	}
	a.vc.proposeMu.Unlock()
	aDone, bDone := exitOnFinish(a), exitOnFinish(b)
	c := mustNode(t, "c", []string{a.cfg.Bind.String()}, 2, hc)
	defer c.Close(100 * time.Millisecond)
	select {
	case <-c.Finished():
	case <-time.After(15 * time.Second):
		s := c.Status()
		t.Fatalf("the agent joined at the end never learnt it; its view %s; ready %v idle %v awaiting %v; a finished %v", c.View(), c.isReady(), s.Idle, s.AwaitingFrom, a.Status().Finished)
	}
	if v := c.View(); v == nil || !v.Has("c") {
		t.Errorf("c finished without the view that has it: %s", v)
	}
	if _, err := os.Stat(c.cfg.FinishedPath); err != nil {
		t.Errorf("c's FINISHED: %v", err)
	}
	<-aDone
	<-bDone
}

// TestJoinAfterTheEnd: an agent asking to join a crawl that is over is
// told so (410) and ends: WaitReady returns ErrFinished and its
// state/FINISHED is written.
func TestJoinAfterTheEnd(t *testing.T) {
	a := mustNode(t, "a", nil, 1, newTestHost())
	defer a.Close(100 * time.Millisecond)
	select {
	case <-a.Finished():
	case <-time.After(10 * time.Second):
		t.Fatal("a alone and idle never finished")
	}
	d := mustNode(t, "d", []string{a.cfg.Bind.String()}, 1, newTestHost())
	defer d.Close(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := d.WaitReady(ctx); !errors.Is(err, ErrFinished) {
		t.Fatalf("joining a finished crawl: %v, want ErrFinished", err)
	}
	if _, err := os.Stat(d.cfg.FinishedPath); err != nil {
		t.Errorf("d's FINISHED: %v", err)
	}
	if v := a.View(); v.Epoch != 1 {
		t.Errorf("a granted a join after the end: %s", v)
	}
}

// heldHost is a testHost whose Apply waits until release is closed; entered
// is closed at its first call.
type heldHost struct {
	*testHost
	entered, release chan struct{}
	once             sync.Once
}

func (h *heldHost) Apply(b *Batch) error {
	h.once.Do(func() { close(h.entered) })
	<-h.release
	return h.testHost.Apply(b)
}

// TestNoEndWithBatchInFlight: both hosts are idle throughout, yet the
// crawl is not declared over while a batch is in flight — first in the
// sender's outbox, unacknowledged (the receiver answers 503, as while it
// stops), then acknowledged but not applied (the receiver's applier is
// held) — for many waves each. Once the batch is applied, the end comes,
// and the record was applied once.
func TestNoEndWithBatchInFlight(t *testing.T) {
	ha := newTestHost()
	hb := &heldHost{testHost: newTestHost(), entered: make(chan struct{}), release: make(chan struct{})}
	release := sync.OnceFunc(func() { close(hb.release) })
	a := mustNode(t, "a", nil, 2, ha)
	defer a.Close(100 * time.Millisecond)
	b := mustNode(t, "b", []string{a.cfg.Bind.String()}, 2, hb)
	defer b.Close(100 * time.Millisecond)
	defer release() // before the Closes: Close waits for the applier
	waitReady(t, a, b)
	noEnd := func(what string) {
		t.Helper()
		select {
		case <-a.Finished():
			t.Fatalf("the end was decided with the batch %s", what)
		case <-b.Finished():
			t.Fatalf("the end was decided with the batch %s", what)
		case <-time.After(15 * a.cfg.Timing.probe()): // waves are a probe interval apart
		}
	}
	b.receiving.Store(false)
	if err := a.Route("b", KindURLs, []byte("http://h.test/p")); err != nil {
		t.Fatal(err)
	}
	noEnd("unacknowledged")
	if n, _ := a.OutboxLen(); n != 1 {
		t.Fatalf("a's outbox holds %d batches, want the one unacknowledged", n)
	}
	b.receiving.Store(true)
	select {
	case <-hb.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the batch never reached b's applier")
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if n, _ := a.OutboxLen(); n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b never acknowledged the batch")
		}
	}
	noEnd("acknowledged, not applied")
	release()
	for _, n := range []*Node{a, b} {
		select {
		case <-n.Finished():
		case <-time.After(15 * time.Second):
			t.Fatalf("%s: no end once the batch was applied; status %+v", n.Name(), n.Status())
		}
	}
	if got := hb.count(); got != 1 {
		t.Errorf("b applied %d records, want 1", got)
	}
}
