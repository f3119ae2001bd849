package agent

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/sieve"
	"github.com/petrel-crawler/petrel/internal/stats"
)

// returnHost is a clusterHost with only what the return's and the interim
// owners' filters use.
func returnHost(t *testing.T) *clusterHost {
	t.Helper()
	assign, err := frontier.ParseAssign("authority")
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{stats: new(stats.Crawl), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	a.cfg.Frontier.Assign = assign
	a.cfg.Cluster.Agent = "c"
	return newClusterHost(a)
}

// readyRec is the ready-queue record of url.
func readyRec(url string) []byte { return append(frontier.Meta{}.Append(nil), url...) }

// hashOf is url's sieve hash under h's assignment.
func hashOf(h *clusterHost, url string) uint64 {
	return sieve.KeyHash(h.a.cfg.Frontier.Assign.GroupHash([]byte(url)), []byte(url))
}

// TestReturnTokens checks the tokens of a return: each hash this agent knew
// drops exactly one copy of its URL, the handed-back copy or its own queued
// one, whichever comes first, and nothing else is dropped.
func TestReturnTokens(t *testing.T) {
	h := returnHost(t)
	const n = 200
	url := func(i int) string { return fmt.Sprintf("http://h%d.example.test/p/%d", i%7, i) }
	var known []uint64
	for i := 0; i < n; i++ {
		if i%4 != 3 { // one URL in four it did not know
			known = append(known, hashOf(h, url(i)))
		}
	}
	h.ho.known.add(known)
	own := h.fetchedElsewhere()
	// The copies of each URL: i%4 == 0 handed back only (fetched before
	// its death), 1 queued here only (fetched by an interim owner), 2 both
	// (queued by both), 3 both but unknown. The two sources race.
	var mu sync.Mutex
	dropped := map[int]int{}
	var wg sync.WaitGroup
	for _, handedBack := range []bool{true, false} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				var d bool
				switch {
				case handedBack && i%4 != 1:
					d = h.handedBackKnown(readyRec(url(i)))
				case !handedBack && i%4 != 0:
					d = own(url(i))
				default:
					continue
				}
				if d {
					mu.Lock()
					dropped[i]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		want := 1 // every known URL: one copy dropped
		if i%4 == 3 {
			want = 0
		}
		if dropped[i] != want {
			t.Errorf("%s (case %d): %d copies dropped, want %d", url(i), i%4, dropped[i], want)
		}
	}
	back, queued := h.a.stats.ReturnKnownDropped.Load(), h.a.stats.ReturnFetchedDropped.Load()
	if back+queued != n/4*3 || queued < n/4 || back < n/4 {
		t.Errorf("ReturnKnownDropped %d + ReturnFetchedDropped %d, want %d in all, at least %d each", back, queued, n/4*3, n/4)
	}
	// Spent tokens drop nothing more; a later view change that is no
	// return keeps the unspent ones.
	v1 := testView(t, 1, "a", "b", "c")
	v2 := testView(t, 2, "a", "b", "c", "d")
	h.ho.known.add([]uint64{hashOf(h, "http://x.example.test/")})
	h.noteReturn(viewChange(h, v1, v2))
	if own(url(1)) || h.handedBackKnown(readyRec(url(2))) {
		t.Error("a spent token dropped a URL again")
	}
	if !own("http://x.example.test/") {
		t.Error("a view change that is no return forgot a token")
	}
}

// testView is a view of epoch e with the agents named.
// viewChange is the change from old to nw as the node gives it to its
// host (the moves; no holds or hand-off: these tests act on neither).
// viewChange is the change from old to nw as h's node hands it over.
func viewChange(h *clusterHost, old, nw *cluster.View) cluster.ViewChange {
	self := h.a.cfg.Cluster.Agent
	return cluster.ViewChange{Old: old, New: nw, Moves: cluster.Moves(old, nw),
		Return: cluster.Returning(self, old, nw), Dead: cluster.DeclaredDead(self, old, nw)}
}

func testView(t *testing.T, e uint64, names ...string) *cluster.View {
	t.Helper()
	var as []cluster.ViewAgent
	for _, n := range names {
		as = append(as, cluster.ViewAgent{Name: n})
	}
	v, err := cluster.NewView(e, as)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestInterimAgain checks that, while a view lists an agent absent, a
// ready URL of a key taken over from it is dropped when it was received
// before (the interim owner let it through its empty seen set again), also
// after the dead agent's return, and that no other ready URL is: not one of
// another key, not a hand-over record, not one this agent forwarded, not
// one on the agent that returned.
func TestInterimAgain(t *testing.T) {
	h := returnHost(t)
	h.a.cfg.Cluster.Agent = "a"
	v1 := testView(t, 1, "a", "b", "c")
	v2 := testView(t, 2, "a", "b")
	v2.Absent = []string{"c"}
	var ofC, ofA []string // URLs of keys c owned in v1, and of keys a owns
	for i := 0; len(ofC) < 20 || len(ofA) < 20; i++ {
		u := fmt.Sprintf("http://h%d.example.test/", i)
		switch v1.Owner(fmt.Sprintf("h%d.example.test", i)) {
		case "c":
			ofC = append(ofC, u)
		case "a":
			ofA = append(ofA, u)
		}
	}
	// Before the death: the first copies, from c's sieve and a's.
	for _, u := range append(slices.Clone(ofC), ofA...) {
		if h.readyAgain(readyRec(u), false) {
			t.Fatalf("%s dropped at its first receipt", u)
		}
	}
	h.noteTakeover(viewChange(h, v1, v2))
	for _, u := range ofC[:10] {
		if !h.readyAgain(readyRec(u), false) {
			t.Errorf("%s of a key taken over from the dead agent, sent again: not dropped", u)
		}
	}
	for _, u := range ofA {
		if h.readyAgain(readyRec(u), false) {
			t.Errorf("%s of a key of a live agent, sent again: dropped", u)
		}
	}
	ho := frontier.AppendHandover(nil, frontier.Handover{Gen: 1}, readyRec(ofC[10]))
	if h.readyAgain(ho, false) {
		t.Errorf("a hand-over record of %s dropped", ofC[10])
	}
	if d := h.a.stats.InterimAgainDropped.Load(); d != 10 {
		t.Errorf("InterimAgainDropped = %d, want 10", d)
	}
	// A record forwarded to another agent and sent back is taken.
	h.forwarded(readyRec(ofC[11]))
	if h.readyAgain(readyRec(ofC[11]), false) {
		t.Errorf("%s dropped when sent back after this agent forwarded it", ofC[11])
	}
	// The dead agent's return: its keys stay checked here (its sieve may
	// let through again what it did since its checkpoint), but not on it.
	v3 := testView(t, 3, "a", "b", "c")
	h.noteTakeover(viewChange(h, v2, v3))
	if !h.readyAgain(readyRec(ofC[12]), false) {
		t.Errorf("%s not dropped after the dead agent's return", ofC[12])
	}
	back := returnHost(t)
	back.noteTakeover(viewChange(back, v1, v2))
	back.readyAgain(readyRec(ofC[0]), false)
	back.noteTakeover(viewChange(back, v2, v3))
	if back.readyAgain(readyRec(ofC[0]), false) {
		t.Errorf("%s dropped on the agent that returned", ofC[0])
	}
}

// TestRestartedSenderChecked checks that once ready batches of two
// processes of one sender have come (a kill -9 and a restart within G, no
// takeover), a ready URL of it received before is dropped whatever its
// key, also from a batch of its earlier process delivered late, and that
// nothing is dropped before, nor a new URL, nor another sender's; a
// process's logged batches count as its own.
func TestRestartedSenderChecked(t *testing.T) {
	h := returnHost(t)
	id := func(sender string, inc uint64) cluster.BatchID {
		return cluster.BatchID{Sender: sender, Incarnation: inc, Seq: 1}
	}
	u, v, w := "http://h1.example.test/a", "http://h2.example.test/b", "http://h3.example.test/c"
	if h.restartedSender(id("b", 4)) || h.readyAgain(readyRec(u), false) || h.readyAgain(readyRec(u), false) {
		t.Fatal("a URL sent twice by one process dropped (no key taken over)")
	}
	if h.restartedSender(id("b", 1<<63|4)) {
		t.Error("the logged batches of b's first process count as another process's")
	}
	if !h.restartedSender(id("b", 5)) {
		t.Fatal("b's second process not seen as restarted")
	}
	if !h.readyAgain(readyRec(u), true) {
		t.Errorf("%s sent again by b's restarted process: not dropped", u)
	}
	if h.readyAgain(readyRec(v), true) {
		t.Errorf("%s, new, dropped", v)
	}
	if !h.restartedSender(id("b", 4)) || !h.readyAgain(readyRec(v), true) {
		t.Errorf("%s in a late batch of b's first process, after the second's: not dropped", v)
	}
	if h.restartedSender(id("c", 1<<63|2)) || h.restartedSender(id("c", 2)) {
		t.Error("c, one process, seen as restarted")
	}
	h.readyAgain(readyRec(w), false)
	h.forwarded(readyRec(w))
	if h.readyAgain(readyRec(w), true) {
		t.Errorf("%s forwarded by this agent and sent back by a restarted one: dropped", w)
	}
	if d := h.a.stats.InterimAgainDropped.Load(); d != 2 {
		t.Errorf("InterimAgainDropped = %d, want 2", d)
	}
}
