package cluster

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// newHandoffHost returns a testHost whose ApplyHandoff takes a while, so
// that a part sent twice at once overlaps.
func newHandoffHost() *testHost {
	h := newTestHost()
	h.handoffDelay = 20 * time.Millisecond
	return h
}

// postPart sends a hand-off part to n's handler as the exchange would.
func postPart(t *testing.T, n *Node, p *Handoff) int {
	t.Helper()
	q := url.Values{"from": {p.From}, "epoch": {strconv.FormatUint(p.Epoch, 10)}, "seq": {strconv.FormatUint(p.Seq, 10)}}
	r := httptest.NewRequest(http.MethodPost, "/v1/handoff?"+q.Encode(), bytes.NewReader(encodeHandoff(p)))
	w := httptest.NewRecorder()
	serveHandoff(w, r, n)
	return w.Code
}

// startOn starts a node named name on dir (alone: it waits for a crawl
// that never comes, which is enough to load and serve its state).
func startOn(t *testing.T, name, dir string, h *testHost) *Node {
	t.Helper()
	n, err := startNode(t, name, testKey, nil, 5, h, [][2]string{{"assign", "authority"}},
		func(c *Config) { c.Dir = dir; c.FinishedPath = filepath.Join(dir, "FINISHED") })
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestHandoffStateSurvivesRestart: the new owner of moved slots holds
// their addresses again after a restart in the middle of the hand-off
// (until each old owner's release), keeps a release's waits across a
// restart, and applies a part sent again — twice at once, after its
// acknowledgement, after a restart, after its epoch's release — once, so
// budget counts are never added twice. The old owner finds its unfinished
// hand-off again at its start.
func TestHandoffStateSurvivesRestart(t *testing.T) {
	t.Parallel() // waits on leases and views more than it computes
	old := mustView(t, 1, []ViewAgent{{Name: "a"}, {Name: "b"}})
	v := mustView(t, 2, []ViewAgent{{Name: "a"}, {Name: "b"}, {Name: "c"}})
	moves := Moves(old, v)
	dir := filepath.Join(t.TempDir(), "c")
	// c joins: what the commit makes it save before the view is in force.
	pre := &Node{cfg: Config{Name: "c", Dir: dir}}
	if err := pre.ho.load(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := pre.expectReleases(old, v); err != nil {
		t.Fatal(err)
	}
	if err := saveView(filepath.Join(dir, "view.json"), v); err != nil {
		t.Fatal(err)
	}

	// A crash; the start resumes both holds before the exchange listens.
	h := newHandoffHost()
	n := startOn(t, "c", dir, h)
	if got := len(h.resumed); got != 2 {
		t.Fatalf("%d holds resumed, want 2 (from a and b)", got)
	}
	for _, p := range h.resumed {
		want := moves[p.From]["c"]
		if p.Epoch != 2 || !slices.Equal(p.Slots, want) {
			t.Errorf("hold from %s at epoch %d: not the slots moved from it", p.From, p.Epoch)
		}
	}
	if aw := n.Awaiting(); aw["a"] != 2 || aw["b"] != 2 {
		t.Fatalf("awaiting %v after the restart", aw)
	}

	// a's first part (its counts) sent twice at once, then again.
	part := &Handoff{From: "a", Epoch: 2, Seq: 1, Counts: map[uint64]int64{0xc0ffee: 7}}
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); postPart(t, n, part) }()
	}
	wg.Wait()
	if code := postPart(t, n, part); code != http.StatusOK {
		t.Fatalf("part sent again: %d", code)
	}
	rel := &Handoff{From: "a", Epoch: 2, Seq: 2, Release: true, Waits: map[string]time.Duration{"127.9.9.9": time.Hour}}
	if code := postPart(t, n, rel); code != http.StatusOK {
		t.Fatalf("release: %d", code)
	}
	if aw := n.Awaiting(); len(aw) != 1 || aw["b"] != 2 {
		t.Fatalf("awaiting %v after a's release, want only b", aw)
	}
	n.Close(50 * time.Millisecond)

	// Another restart: only b's hold is resumed, with the wait a's
	// release carried; a's parts sent again by a resumed sender are
	// acknowledged, not applied.
	h2 := newHandoffHost()
	n = startOn(t, "c", dir, h2)
	defer n.Close(50 * time.Millisecond)
	if len(h2.resumed) != 1 || h2.resumed[0].From != "b" {
		t.Fatalf("holds resumed after a's release: %v, want b's only", h2.resumed)
	}
	if d := time.Until(h2.notBefore["127.9.9.9"]); d < 59*time.Minute {
		t.Fatalf("the release's wait after a restart: %v left, want about an hour", d)
	}
	for _, p := range []*Handoff{part, rel} {
		if code := postPart(t, n, p); code != http.StatusOK {
			t.Fatalf("part of a released epoch sent again: %d", code)
		}
	}
	all := slices.Concat(h.parts, h2.parts)
	if want := []string{"a/2/1", "a/2/2"}; !slices.Equal(all, want) {
		t.Fatalf("parts applied %v, want each once: %v", all, want)
	}
	if c := h.counts[0xc0ffee] + h2.counts[0xc0ffee]; c != 7 {
		t.Fatalf("count handed over applied as %d, want 7", c)
	}

	// The old owner a: its unfinished hand-off is found at its start.
	adir := filepath.Join(t.TempDir(), "a")
	pa := &Node{cfg: Config{Name: "a", Dir: adir}}
	if err := pa.ho.load(adir); err != nil {
		t.Fatal(err)
	}
	if _, err := pa.expectReleases(old, v); err != nil {
		t.Fatal(err)
	}
	na := startOn(t, "a", adir, newHandoffHost())
	g := na.PendingGiving()
	if len(g) != 1 || g[0].Old.Epoch != 1 || g[0].New.Epoch != 2 || !sameAgents(g[0].New, v) || len(g[0].Give) == 0 {
		t.Fatalf("unfinished hand-offs at a's start: %v", g)
	}
	// The earliest next requests its first run computed are kept for the
	// releases of the resumed run, which knows of no request in flight.
	soon := time.Now().Add(time.Hour)
	if _, err := na.GivingUntil(2, map[string]time.Time{"127.9.9.8": soon}); err != nil {
		t.Fatal(err)
	}
	na.Close(50 * time.Millisecond)
	na = startOn(t, "a", adir, newHandoffHost())
	got, err := na.GivingUntil(2, map[string]time.Time{"127.9.9.7": time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if !got["127.9.9.8"].Equal(soon) || len(got) != 2 {
		t.Fatalf("the waits of a resumed hand-off: %v, want 127.9.9.8 at %v and 127.9.9.7", got, soon)
	}
	if err := na.GivingDone(2); err != nil {
		t.Fatal(err)
	}
	na.Close(50 * time.Millisecond)
	na = startOn(t, "a", adir, newHandoffHost())
	defer na.Close(50 * time.Millisecond)
	if g := na.PendingGiving(); len(g) != 0 {
		t.Fatalf("a finished hand-off found again: %v", g)
	}
}

// TestLeaveMarkSurvivesRestart: a leave not finished is found at the
// next start; a finished one is not.
func TestLeaveMarkSurvivesRestart(t *testing.T) {
	t.Parallel() // waits on leases and views more than it computes
	dir := filepath.Join(t.TempDir(), "a")
	n := startOn(t, "a", dir, newTestHost())
	if n.IsLeaving() {
		t.Fatal("a fresh agent is leaving")
	}
	if err := n.Leaving(); err != nil {
		t.Fatal(err)
	}
	n.Close(50 * time.Millisecond)
	n = startOn(t, "a", dir, newTestHost())
	if !n.IsLeaving() {
		t.Fatal("a leave begun before a crash is not resumed")
	}
	if err := n.LeaveDone(); err != nil {
		t.Fatal(err)
	}
	n.Close(50 * time.Millisecond)
	n = startOn(t, "a", dir, newTestHost())
	defer n.Close(50 * time.Millisecond)
	if n.IsLeaving() {
		t.Fatal("a finished leave is resumed")
	}
}

// TestLeftAgentBatchesNotRerouted: an agent c leaves a crawl of three. A
// batch for it that a had sent and whose acknowledgement was lost (c has
// it in its inbox) is delivered to c again, which acknowledges it as a
// duplicate, and is not re-routed to c's successor (a second copy there
// would be applied twice: a ready URL fetched twice); a batch never sent
// to c is re-routed to the new owner of its records at once.
func TestLeftAgentBatchesNotRerouted(t *testing.T) {
	t.Parallel() // waits on leases and views more than it computes
	ha, hb, hc := newTestHost(), newTestHost(), newTestHost()
	// Slow probes and a long G: no takeover on a loaded machine.
	start := func(name string, join []string, h *testHost) *Node {
		n, err := startNode(t, name, testKey, join, 3, h, [][2]string{{"assign", "authority"}},
			func(c *Config) { c.Grace = time.Minute })
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a := start("a", nil, ha)
	b := start("b", []string{a.cfg.Bind.String()}, hb)
	c := start("c", []string{a.cfg.Bind.String()}, hc)
	defer func() {
		for _, n := range []*Node{a, b, c} {
			n.Close(100 * time.Millisecond)
		}
	}()
	waitReady(t, a, b, c)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// Records c owns in the view of three and b in the view without c.
	next, err := NextView(a.View(), nil, "c")
	if err != nil {
		t.Fatal(err)
	}
	var recs []string
	for i := 0; len(recs) < 2; i++ {
		r := fmt.Sprintf("http://h%d.test/", i)
		if a.View().Owner(r) == "c" && next.Owner(r) == "b" {
			recs = append(recs, r)
		}
	}
	batch := func(seq uint64, rec string) (BatchID, []byte) {
		bt := &Batch{ID: BatchID{Sender: "a", Incarnation: a.incarnation, Seq: 1<<40 + seq}, Kind: KindReady, Epoch: a.View().Epoch, Records: [][]byte{[]byte(rec)}}
		w, _ := bt.Encode(nil, nil)
		return bt.ID, w
	}
	// Delivered to c before it left (after, its fence refuses it: fence.go),
	// its acknowledgement lost: still in a's outbox, sent.
	id1, w1 := batch(1, recs[0])
	if err := a.client.SendBatch(ctx, c.cfg.ExchangeAddr(), w1); err != nil {
		t.Fatal(err)
	}
	c.Leaving()
	for _, n := range []*Node{a, b, c} {
		if err := n.WaitView(ctx, func(v *View) bool { return !v.Has("c") }); err != nil {
			t.Fatalf("%s holds %s", n.Name(), n.View())
		}
	}
	a.tried.put("c", id1, struct{}{})
	if err := a.outbox.Put(ctx, "c", id1, w1, true); err != nil {
		t.Fatal(err)
	}
	// Never sent to c.
	id2, w2 := batch(2, recs[1])
	if err := a.outbox.Put(ctx, "c", id2, w2, true); err != nil {
		t.Fatal(err)
	}
	for {
		if n, _ := a.OutboxLen(); n == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("a's outbox for c not emptied")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for deadline := time.Now().Add(5 * time.Second); hb.count() < 1 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // a second copy would arrive by now
	hc.mu.Lock()
	atC := hc.records[recs[0]]
	hc.mu.Unlock()
	hb.mu.Lock()
	atB0, atB1 := hb.records[recs[0]], hb.records[recs[1]]
	hb.mu.Unlock()
	if atC != 1 || atB0 != 0 {
		t.Errorf("the batch c had acknowledged was applied %d times at c and %d at b, want once at c", atC, atB0)
	}
	if atB1 != 1 {
		t.Errorf("the batch never sent to c was applied %d times at b, want once", atB1)
	}
	if d := c.counts.duplicateBatches.Load(); d != 1 {
		t.Errorf("c counted %d duplicate batches, want 1 (the one sent again)", d)
	}
}

// TestForgetLeftAgent: c leaves a crawl of three and stops before any
// release (a kill in the middle of its leave, never started again): a and
// b await its release. Forgetting c ends their wait (a view listing it
// absent, then one without it); forgetting a name no member awaits is
// refused.
func TestForgetLeftAgent(t *testing.T) {
	t.Parallel() // waits on leases and views more than it computes
	start := func(name string, join []string) *Node {
		n, err := startNode(t, name, testKey, join, 3, newTestHost(), [][2]string{{"assign", "authority"}},
			func(c *Config) { c.Grace = time.Second })
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a := start("a", nil)
	b := start("b", []string{a.cfg.Bind.String()})
	c := start("c", []string{a.cfg.Bind.String()})
	defer a.Close(100 * time.Millisecond)
	defer b.Close(100 * time.Millisecond)
	waitReady(t, a, b, c)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c.Leaving()
	for _, n := range []*Node{a, b} {
		if err := n.WaitView(ctx, func(v *View) bool { return !v.Has("c") }); err != nil {
			t.Fatalf("%s holds %s", n.Name(), n.View())
		}
	}
	left := a.View()
	c.closeParts() // gone before its releases
	for a.Alive("c") || b.Alive("c") {
		if ctx.Err() != nil {
			t.Fatal("c never seen gone")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, ok := a.Awaiting()["c"]; !ok {
		t.Fatalf("a awaits %v, want c's release", a.Awaiting())
	}
	if _, err := Forget(ctx, crawlOf(a), "zz"); err == nil {
		t.Fatal("forgetting an agent nobody awaits was accepted")
	}
	msg, err := Forget(ctx, crawlOf(a), "c")
	if err != nil {
		t.Fatal(err)
	}
	t.Log(msg)
	for _, n := range []*Node{a, b} {
		for n.View().Epoch < left.Epoch+2 || len(n.View().Absent) > 0 {
			if ctx.Err() != nil {
				t.Fatalf("%s holds %s after the forget", n.Name(), n.View())
			}
			time.Sleep(10 * time.Millisecond)
		}
		if v := n.View(); len(v.Absent) != 0 || v.Has("c") {
			t.Errorf("%s: view after the forget %s", n.Name(), v)
		}
		if aw := n.Awaiting(); len(aw) != 0 {
			t.Errorf("%s still awaits %v", n.Name(), aw)
		}
	}
	if _, err := Forget(ctx, crawlOf(a), "c"); err == nil {
		t.Error("c forgotten twice")
	}
}

func sameAgents(a, b *View) bool { return slices.Equal(a.Agents, b.Agents) }
