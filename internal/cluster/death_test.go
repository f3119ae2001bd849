package cluster

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/coord"
)

func startGraced(t *testing.T, name string, join []string, h *testHost, grace time.Duration) *Node {
	t.Helper()
	n, err := startNode(t, name, testKey, join, 3, h, [][2]string{{"assign", "authority"}}, func(c *Config) { c.Grace = grace })
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// startGracedThree starts a crawl of three agents a, b and c (a the
// coordinator) with grace period grace, and waits for its view.
func startGracedThree(t *testing.T, grace time.Duration) (a, b, c *Node, ha, hb, hc *testHost) {
	t.Helper()
	ha, hb, hc = newTestHost(), newTestHost(), newTestHost()
	a = startGraced(t, "a", nil, ha, grace)
	b = startGraced(t, "b", []string{a.cfg.Bind.String()}, hb, grace)
	c = startGraced(t, "c", []string{a.cfg.Bind.String()}, hc, grace)
	waitReady(t, a, b, c)
	return a, b, c, ha, hb, hc
}

// TestDeathTakeoverAndForget kills one agent of three (no leave): the
// crawl stays open while it is dead, the others take its keys over in a
// new view after the grace period (it is listed absent, so the crawl still
// stays open), the batches held for it are re-routed to the new owners
// and applied once, and a forget lets the crawl end.
func TestDeathTakeoverAndForget(t *testing.T) {
	t.Parallel() // waits on leases and views more than it computes
	const grace = time.Second
	a, b, c, ha, hb, _ := startGracedThree(t, grace)
	v1 := a.View()

	// c dies: no leave, its listeners gone.
	killed := time.Now()
	c.cancel() // its lease is kept alive no more: it expires in etcd
	c.tr.(*httpTransport).server.Close()
	// URLs for c's keys found once it is dead wait in a's outbox, never
	// sent: re-routed at the takeover.
	for deadline := time.Now().Add(10 * time.Second); a.Alive("c"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("c never declared dead")
		}
	}
	var forC []string
	for i := 0; len(forC) < 200; i++ {
		if g := fmt.Sprintf("http://h%d.test/", i); v1.Owner(g) == "c" {
			forC = append(forC, g)
			if err := a.Route("c", KindURLs, []byte(g)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}

	// The takeover: a view without c, c absent, after at least G.
	deadline := time.Now().Add(15 * time.Second)
	for a.View().Epoch == v1.Epoch || b.View().Epoch == v1.Epoch {
		select {
		case <-a.Finished():
			t.Fatal("the crawl finished while c was dead")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no takeover: views %s / %s", a.View(), b.View())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if took := time.Since(killed); took < grace {
		t.Errorf("takeover %s after the kill, before the grace period %s", took, grace)
	}
	v2 := a.View()
	if v2.Has("c") || !slices.Equal(v2.Absent, []string{"c"}) || b.View().String() != v2.String() {
		t.Fatalf("views after the takeover: %s / %s", v2, b.View())
	}
	// The batches for c reach the new owners, once each.
	deadline = time.Now().Add(10 * time.Second)
	for ha.count()+hb.count() < len(forC) {
		if time.Now().After(deadline) {
			t.Fatalf("re-routed: a applied %d, b %d of %d records", ha.count(), hb.count(), len(forC))
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, g := range forC {
		owner := map[string]*testHost{"a": ha, "b": hb}[v2.Owner(g)]
		owner.mu.Lock()
		k := owner.records[g]
		owner.mu.Unlock()
		if k != 1 {
			t.Errorf("%s applied %d times at its new owner %s", g, k, v2.Owner(g))
		}
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, _ := a.OutboxLen()
		if b == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("a's outbox holds %d batches after the re-routing", b)
			break
		}
	}
	// c is absent: the crawl stays open although a and b are idle.
	select {
	case <-a.Finished():
		t.Fatal("the crawl finished while c is absent")
	case <-time.After(time.Second):
	}
	// petrel cluster forget, through b's connection to etcd.
	msg, err := Forget(context.Background(), crawlOf(b), "c")
	if err != nil || !contains(msg, "forgot agent c") {
		t.Fatalf("forget: %q, %v", msg, err)
	}
	t.Logf("forget: %s", msg)
	for _, nd := range []*Node{a, b} {
		select {
		case <-nd.Finished():
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: crawl not finished after the forget; view %s", nd.Name(), nd.View())
		}
	}
	if v := a.View(); v.Has("c") || len(v.Absent) != 0 {
		t.Errorf("view after the forget: %s", v)
	}
	if _, err := Forget(context.Background(), crawlOf(a), "b"); err == nil {
		t.Error("forgot an alive agent")
	}
	c.closeParts()
	for _, nd := range []*Node{a, b} {
		nd.Close(100 * time.Millisecond)
	}
	if v, err := LoadView(filepath.Join(a.cfg.Dir)); err != nil || v.Epoch != a.View().Epoch {
		t.Errorf("saved view %v, %v", v, err)
	}
}

// TestDeathReturn restarts a dead agent on its directory after the
// takeover: it starts with its guard closed and its old view, learns the
// newer view without it (and so stays closed), is brought back by the
// coordinator in the next view once it announces the current epoch, and
// opens its guard only then.
func TestDeathReturn(t *testing.T) {
	t.Parallel() // waits on leases and views more than it computes
	const grace = time.Second
	a, b, c, _, _, _ := startGracedThree(t, grace)
	v1 := c.View()
	cfg := c.cfg
	c.closeParts()
	deadline := time.Now().Add(15 * time.Second)
	for a.View().Epoch == v1.Epoch {
		if time.Now().After(deadline) {
			t.Fatalf("no takeover: %s", a.View())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The restart on its directory, with the view of epoch 1 it saved.
	hc2 := newTestHost()
	c2, err := Start(cfg, hc2)
	if err != nil {
		t.Fatal(err)
	}
	hc2.node.Store(c2)
	c2.Follow()
	defer c2.Close(100 * time.Millisecond)
	if c2.View().Epoch != v1.Epoch || c2.guard.Allowed() {
		t.Fatalf("restarted with view %s, guard open %v", c2.View(), c2.guard.Allowed())
	}
	opened := time.Now().Add(20 * time.Second)
	for !c2.guard.Allowed() {
		v := c2.View()
		if v.Epoch > v1.Epoch && !v.Has("c") && c2.guard.Allowed() {
			t.Fatalf("guard open under a view without c: %s", v)
		}
		if time.Now().After(opened) {
			t.Fatalf("not brought back: c holds %s, a %s; guard: %s", c2.View(), a.View(), c2.guard.Reason())
		}
		time.Sleep(10 * time.Millisecond)
	}
	v := c2.View()
	waitEpoch(t, v.Epoch, 5*time.Second, a)
	if !v.Has("c") || len(v.Absent) != 0 || a.View().String() != v.String() {
		t.Errorf("guard opened under %s (a holds %s)", v, a.View())
	}
	for _, nd := range []*Node{a, b} {
		nd.Close(100 * time.Millisecond)
	}
}

// TestDeathKeepsBatchSentToTheDead: a batch a sent to c (in flight when c
// was cut off, perhaps in its inbox) is not re-routed at c's takeover,
// although a batch of the same id (sequence numbers count per
// destination) that a sent to b was acknowledged meanwhile: that
// acknowledgement is b's, and says nothing of c's copy. Re-routed, its
// ready URL would be applied by c's interim owner and by c at its return.
func TestDeathKeepsBatchSentToTheDead(t *testing.T) {
	t.Parallel() // waits on leases and views more than it computes
	const grace = time.Second
	a, b, c, ha, hb, _ := startGracedThree(t, grace)
	v1 := a.View()
	var forB, forC string
	for i := 0; forB == "" || forC == ""; i++ {
		g := fmt.Sprintf("http://h%d.test/", i)
		switch v1.Owner(g) {
		case "b":
			forB = g
		case "c":
			forC = g
		}
	}
	// c's exchange stops answering (its lease is kept alive), as a process
	// stopped with SIGSTOP: the kernel takes the connection, nothing reads
	// it. a's batch for it is sent once, and stays in a's outbox.
	c.tr.(*httpTransport).server.Close()
	hung, err := net.Listen("tcp", c.cfg.ExchangeAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	if err := a.Route("c", KindReady, []byte(forC)); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	var toC OutEntry
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if es := a.outbox.Pending("c", 1, nil); len(es) == 1 && a.tried.has("c", es[0].ID) {
			toC = es[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a's batch for c never tried")
		}
	}
	// A batch of the same id for b, delivered and acknowledged.
	if err := a.Route("b", KindReady, []byte(forB)); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	a.batch.mu.Lock()
	seqB := a.batch.seqs["b"]
	a.batch.mu.Unlock()
	if seqB != toC.ID.Seq {
		t.Fatalf("a's batch for b has sequence %d, its batch for c %d: want the same id", seqB, toC.ID.Seq)
	}
	for deadline := time.Now().Add(5 * time.Second); hb.count() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a's batch for b never applied")
		}
	}
	// c dies; a and b take its keys over.
	c.cancel()
	for deadline := time.Now().Add(15 * time.Second); a.View().Epoch == v1.Epoch || b.View().Epoch == v1.Epoch; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no takeover: views %s / %s", a.View(), b.View())
		}
	}
	time.Sleep(1500 * time.Millisecond) // re-routing runs at every view and every second
	ha.mu.Lock()
	atA := ha.records[forC]
	ha.mu.Unlock()
	hb.mu.Lock()
	atB := hb.records[forC]
	hb.mu.Unlock()
	if atA+atB != 0 {
		t.Errorf("the batch sent to c was re-routed at its takeover: applied %d times at a, %d at b", atA, atB)
	}
	if es := a.outbox.Pending("c", 2, nil); len(es) != 1 || es[0].ID != toC.ID {
		t.Errorf("a's outbox for c holds %v, want the batch sent to it (%s), kept for its return", es, toC.ID)
	}
	c.closeParts()
	for _, nd := range []*Node{a, b} {
		nd.Close(100 * time.Millisecond)
	}
}

// crawlOf returns n's connection to the crawl's etcd.
func crawlOf(n *Node) *coord.Crawl {
	_, c := n.crawlState()
	return c
}
