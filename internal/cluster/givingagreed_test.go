package cluster

import (
	"context"
	"sync"
	"testing"
	"time"
)

// partHost records the hand-off parts applied to it.
type partHost struct {
	*rerouteHost
	mu    sync.Mutex
	parts []*Handoff
}

func (h *partHost) ApplyHandoff(p *Handoff) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.parts = append(h.parts, p)
	return nil
}

func (h *partHost) partsFrom(from string, epoch uint64) (n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.parts {
		if p.From == from && p.Epoch == epoch {
			n++
		}
	}
	return n
}

func startPartHost(t *testing.T, name string, join []string, grace time.Duration, dir string) (*Node, *partHost) {
	t.Helper()
	h := &partHost{rerouteHost: &rerouteHost{testHost: newTestHost()}}
	n, err := startNode(t, name, testKey, join, 3, h, [][2]string{{"assign", "authority"}}, func(c *Config) {
		c.Grace = grace
		if dir != "" {
			c.Dir = dir
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	h.node = n
	return n, h
}

// resumeGivingAsHost does with c's saved hand-offs what an agent does
// once its node is ready: each is given (a part with a budget count sent
// to each new owner) once GivingAgreed says its view was agreed. It
// returns a channel closed when every one is given or dropped.
func resumeGivingAsHost(t *testing.T, c *Node) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, vs := range c.PendingGiving() {
		base, nw := vs[0], vs[1]
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !c.GivingAgreed(nw.Epoch) {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			for to := range Moves(base, nw)[c.Name()] {
				c.SendHandoff(ctx, to, &Handoff{Epoch: nw.Epoch, Seq: 1, Counts: map[uint64]int64{0xc0ffee: 1}})
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

// TestOrphanHandoffNotResumed restarts, after the takeover of its keys,
// an agent whose directory holds a view of the takeover's epoch that
// nobody else holds, with the hand-off that view began to give (keys
// moved to a). Once ready, it resumes that hand-off only if the view is
// agreed: the crawl's members hold another view of the epoch, so a
// receives no part of it, before or after the restarted agent adopts the
// crawl's view.
func TestOrphanHandoffNotResumed(t *testing.T) {
	const grace = time.Second
	a, ha := startPartHost(t, "a", nil, grace, "")
	b, hb := startPartHost(t, "b", []string{a.cfg.Bind.String()}, grace, "")
	c, _ := startPartHost(t, "c", []string{a.cfg.Bind.String()}, grace, "")
	defer a.Close(100 * time.Millisecond)
	defer b.Close(100 * time.Millisecond)
	waitReady(t, a, b, c)
	cfg, v1, agreed := killTakenOver(t, a, b, c)
	orphan, pre := writeOrphanView(t, cfg.Dir, v1, []ViewAgent{{Name: "a", Weight: 3}})
	if g := pre.ho.st.Giving; len(g) != 1 || g[0].Epoch != orphan.Epoch || len(Moves(v1, orphan)["c"]["a"]) == 0 {
		t.Fatalf("the orphan view's hand-off to give: %v (to a: %v)", g, Moves(v1, orphan)["c"])
	}

	c2, _ := startPartHost(t, "c", cfg.Join, grace, cfg.Dir)
	defer c2.Close(100 * time.Millisecond)
	done := resumeGivingAsHost(t, c2)
	back := awaitReturn(t, c2, agreed)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the orphan view's hand-off is neither given nor dropped")
	}
	waitEpoch(t, back.Epoch, 10*time.Second, a)
	if !sameView(back, a.View()) {
		t.Errorf("c's guard opened under %s; a holds %s", back, a.View())
	}
	if n := ha.partsFrom("c", orphan.Epoch) + hb.partsFrom("c", orphan.Epoch); n > 0 {
		t.Errorf("the receivers applied %d parts of the hand-off of a view never agreed", n)
	}
}

// TestLeaveHandoffResumed kills a leaving agent right after the view
// without it is installed, and restarts it on its directory (it resumes
// its leave: no rejoin). The hand-off its leave began is agreed (the
// others hold that view), so it is resumed, not held back until a guard
// that never opens under a view without this agent.
func TestLeaveHandoffResumed(t *testing.T) {
	const grace = 5 * time.Second
	a, _ := startPartHost(t, "a", nil, grace, "")
	b, _ := startPartHost(t, "b", []string{a.cfg.Bind.String()}, grace, "")
	c, _ := startPartHost(t, "c", []string{a.cfg.Bind.String()}, grace, "")
	defer a.Close(100 * time.Millisecond)
	defer b.Close(100 * time.Millisecond)
	waitReady(t, a, b, c)
	cfg := c.cfg
	left, err := NextView(c.View(), nil, "c")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Leaving(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.ProposeView(ctx, left, "leave of c"); err != nil {
		t.Fatal(err)
	}
	waitEpoch(t, left.Epoch, 10*time.Second, a, b)
	kill(c)
	c2, _ := startPartHost(t, "c", cfg.Join, grace, cfg.Dir)
	defer c2.Close(100 * time.Millisecond)
	pending := c2.PendingGiving()
	if !c2.IsLeaving() || len(pending) != 1 || pending[0][1].Epoch != left.Epoch {
		t.Fatalf("after the restart: leaving %v, hand-offs to give %v", c2.IsLeaving(), pending)
	}
	agreed := make(chan bool, 1)
	go func() { agreed <- c2.GivingAgreed(left.Epoch) }()
	select {
	case ok := <-agreed:
		if !ok {
			t.Fatal("the leave's hand-off was dropped")
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the leave's hand-off is not resumed (c holds %s)", c2.View())
	}
}
