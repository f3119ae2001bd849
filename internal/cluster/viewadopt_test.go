package cluster

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// kill cuts n off as a kill -9 would: no leave, its listeners gone.
func kill(n *Node) {
	n.members.ml.Shutdown()
	n.server.Close()
	n.closeParts()
}

// restart starts again, on its directory, an agent killed with kill.
func restart(t *testing.T, cfg Config) *Node {
	t.Helper()
	h := &rerouteHost{testHost: newTestHost()}
	n, err := Start(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	h.node = n
	t.Cleanup(func() { n.Close(100 * time.Millisecond) })
	return n
}

// waitEpoch waits until every node holds a view of epoch at least e.
func waitEpoch(t *testing.T, e uint64, within time.Duration, ns ...*Node) {
	t.Helper()
	deadline := time.Now().Add(within)
	for _, n := range ns {
		for n.View().Epoch < e {
			if time.Now().After(deadline) {
				t.Fatalf("%s holds %s, not epoch %d yet", n.Name(), n.View(), e)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// awaitReturn watches the restarted agent r until its guard opens under a
// view that gives it keys, and fails if the guard is ever open under a
// view of the epoch of agreed (the crawl's view, which lists r absent)
// other than agreed itself. It returns the view the guard opened under.
func awaitReturn(t *testing.T, r *Node, agreed *View) *View {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v := r.View()
		open := r.guard.Allowed()
		if open && v.Epoch == agreed.Epoch && !sameView(v, agreed) {
			t.Fatalf("%s's guard is open under %s, a view of epoch %d the crawl never agreed (it agreed %s)", r.Name(), v, v.Epoch, agreed)
		}
		if open && v.Epoch > agreed.Epoch && v.Has(r.Name()) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never brought back: it holds %s; guard: %s", r.Name(), v, r.guard.Reason())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// killTakenOver kills c and waits until a and b agree the view of epoch
// 2 that takes its keys over. It returns c's config, the view c held and
// the takeover.
func killTakenOver(t *testing.T, a, b, c *Node) (Config, *View, *View) {
	t.Helper()
	cfg := c.cfg
	v1 := c.View()
	kill(c)
	waitEpoch(t, 2, 15*time.Second, a, b)
	taken := a.View()
	if taken.Has("c") || !sameView(taken, b.View()) {
		t.Fatalf("takeover: %s at a, %s at b", taken, b.View())
	}
	return cfg, v1, taken
}

// writeOrphanView writes into c's directory dir the view after v1 with
// add, as c's install of it left it: its hand-off state (releases
// awaited, moves held, a hand-off to give) and the view itself. It
// returns that view and the node whose hand-off state was saved.
func writeOrphanView(t *testing.T, dir string, v1 *View, add []ViewAgent) (*View, *Node) {
	t.Helper()
	orphan, err := NextView(v1, add)
	if err != nil {
		t.Fatal(err)
	}
	pre := &Node{cfg: Config{Name: "c", Dir: dir}}
	if err := pre.ho.load(dir); err != nil {
		t.Fatal(err)
	}
	if err := pre.expectReleases(v1, orphan, Moves(v1, orphan)); err != nil {
		t.Fatal(err)
	}
	if err := saveView(filepath.Join(dir, "view.json"), orphan); err != nil {
		t.Fatal(err)
	}
	return orphan, pre
}

// TestProposerKilledBeforeCommit kills the coordinator of three agents
// once every target promised its view and before any commit is sent. The
// two others, once their promises lapse and the grace period is over,
// agree another view of that epoch (the takeover of its keys). Restarted
// on its directory, it must not hold the view it proposed, nor fetch
// under it: it learns the crawl's view, is brought back in the next one,
// and only then opens its guard.
func TestProposerKilledBeforeCommit(t *testing.T) {
	const grace = time.Second
	a, b, c, _, _, _ := startGracedThree(t, grace)
	defer b.Close(100 * time.Millisecond)
	defer c.Close(100 * time.Millisecond)
	cfg := a.cfg
	v1 := a.View()
	for deadline := time.Now().Add(10 * time.Second); !a.guard.Allowed() || !b.guard.Allowed() || !c.guard.Allowed(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the guards never opened")
		}
	}
	next, err := NextView(v1, []ViewAgent{{Name: "c", Weight: 2}})
	if err != nil {
		t.Fatal(err)
	}
	killed := errors.New("killed between the phases")
	a.vc.beforeCommit = func() error { kill(a); return killed }
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.ProposeView(ctx, next, "c weighs twice"); !errors.Is(err, killed) {
		t.Fatalf("proposal: %v", err)
	}
	// b and c refuse another view of epoch 2 while their promise holds,
	// then take a's keys over (after its death is confirmed and G: the
	// bound leaves a loaded machine room).
	waitEpoch(t, next.Epoch, promiseTTL+45*time.Second, b, c)
	agreed := b.View()
	if agreed.Has("a") || !slices.Equal(agreed.Absent, []string{"a"}) || !sameView(agreed, c.View()) {
		t.Fatalf("the crawl's view of epoch %d: %s at b, %s at c", next.Epoch, agreed, c.View())
	}
	if saved, err := LoadView(cfg.Dir); err != nil || saved.Epoch != v1.Epoch {
		t.Fatalf("the killed proposer saved %s (%v), want the view it held, of epoch %d", saved, err, v1.Epoch)
	}
	cfg.Join = []string{b.cfg.Bind.String()} // a started the crawl: it joined nobody
	a2 := restart(t, cfg)
	back := awaitReturn(t, a2, agreed)
	waitEpoch(t, back.Epoch, 10*time.Second, b)
	if !sameView(back, b.View()) {
		t.Errorf("a's guard opened under %s; b holds %s", back, b.View())
	}
}

// TestOrphanViewAdopted restarts, after the takeover of its keys, an agent
// whose directory holds a view of the takeover's epoch that nobody else
// holds (a target killed right after installing a commit nobody else
// received, its promise since lapsed), with the hand-off that view began.
// It adopts the crawl's view of that epoch, drops the hand-off of its
// own, never opens its guard under it, and is brought back.
func TestOrphanViewAdopted(t *testing.T) {
	const grace = time.Second
	a, b, c, _, _, _ := startGracedThree(t, grace)
	defer a.Close(100 * time.Millisecond)
	defer b.Close(100 * time.Millisecond)
	cfg, v1, agreed := killTakenOver(t, a, b, c)
	// c's directory: the orphan view of epoch 2 as its install left it.
	orphan, pre := writeOrphanView(t, cfg.Dir, v1, []ViewAgent{{Name: "a", Weight: 3}})
	if g := pre.ho.st.Giving; len(g) != 1 || g[0].Epoch != orphan.Epoch {
		t.Fatalf("the orphan view's hand-off to give: %v", g)
	}

	c2 := restart(t, cfg)
	if !sameView(c2.View(), orphan) || c2.guard.Allowed() {
		t.Fatalf("restarted with view %s, guard open %v", c2.View(), c2.guard.Allowed())
	}
	back := awaitReturn(t, c2, agreed)
	waitEpoch(t, back.Epoch, 10*time.Second, a)
	if !sameView(back, a.View()) {
		t.Errorf("c's guard opened under %s; a holds %s", back, a.View())
	}
	c2.ho.mu.Lock()
	defer c2.ho.mu.Unlock()
	for _, m := range c2.ho.st.Giving {
		if m.Epoch == orphan.Epoch {
			t.Errorf("the orphan view's hand-off is still to be given: %v", m)
		}
	}
}
