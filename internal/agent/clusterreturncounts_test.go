package agent

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/diskq"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/sieve"
	"github.com/petrel-crawler/petrel/internal/stats"
)

// inSlot returns a hash (a count key or a seen hash) of slot s.
func inSlot(s uint32, low uint64) uint64 { return uint64(s)<<(64-sieve.GroupBits) | low }

// TestTakeOffKnown: a slot's known hashes are taken off its keys' counts,
// one URL each: exactly for a slot of one key, in total for a slot of
// several (each key within its count), never below zero; a slot with no
// known hash keeps its counts.
func TestTakeOffKnown(t *testing.T) {
	k1, k2a, k2b, k3, k4 := inSlot(1, 1), inSlot(2, 1), inSlot(2, 2), inSlot(3, 1), inSlot(4, 1)
	own := map[uint64]int64{k1: 10, k2a: 3, k2b: 5, k3: 2, k4: 6}
	var known []uint64
	for i, n := range map[uint32]int{1: 3, 2: 4, 3: 9} {
		for j := range n {
			known = append(known, inSlot(i, uint64(100+j)))
		}
	}
	got := takeOffKnown(own, known)
	if got[k1] != -3 || got[k3] != -2 || got[k4] != 0 {
		t.Errorf("slot 1 took off %d (want 3), slot 3 %d (want its 2, not below zero), slot 4 %d (want 0)", -got[k1], -got[k3], -got[k4])
	}
	if got[k2a]+got[k2b] != -4 || got[k2a] > 0 || got[k2b] > 0 || got[k2a] < -3 || got[k2b] < -5 {
		t.Errorf("slot 2's keys lose %d and %d, want 4 in all, each within its count", -got[k2a], -got[k2b])
	}
}

// countedHost is the part of an agent that a hand-off part's seen hashes
// and counts go through, opened on dir from the files there as a start
// after recovery opens them: the frontier reads state/counts, the sieve
// state/sieve; the log of received counts is state/counts.received; the
// ready queue is a fresh one.
func countedHost(t *testing.T, dir string) *clusterHost {
	t.Helper()
	assign, err := frontier.ParseAssign("authority")
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{stats: new(stats.Crawl), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	a.cfg.Dir = dir
	a.cfg.Frontier.Assign = assign
	a.cfg.Cluster.Agent = "r"
	if err := os.MkdirAll(filepath.Join(dir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	var counts io.Reader
	if b, err := os.ReadFile(filepath.Join(dir, "state", "counts")); err == nil {
		counts = bytes.NewReader(b)
	}
	ready, err := diskq.Open(t.TempDir(), diskq.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	fc := frontier.Config{Counts: counts, Ready: ready, Stats: a.stats, OpenSieve: func(r *frontier.Receiver) (frontier.Sieve, error) { return a.openSieve(&a.cfg, r) }}
	fc.Assign = assign
	f, err := frontier.New(fc)
	if err != nil {
		t.Fatal(err)
	}
	a.frontier = f
	return newClusterHost(a)
}

// cut takes what a checkpoint takes of the sieve and the counts into
// folder cp, as Agent.checkpoint does (under the cut, the position the
// counts cover recorded).
func (h *clusterHost) cutInto(t *testing.T, cp string) {
	t.Helper()
	l, err := h.receivedCounts()
	if err != nil {
		t.Fatal(err)
	}
	release := h.holdCut()
	pos, rel := l.hold()
	if err := h.a.sieve.Checkpoint(filepath.Join(cp, "sieve")); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := h.a.frontier.SaveCounts(&b); err != nil {
		t.Fatal(err)
	}
	rel()
	release()
	if err := os.WriteFile(filepath.Join(cp, "counts"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeReceivedPos(cp, pos); err != nil {
		t.Fatal(err)
	}
}

// crashAndRecover abandons h as a kill -9 does (nothing closed, nothing
// flushed) and puts dir's state back to checkpoint cp as crash recovery
// does; it returns the host opened on the recovered files.
func crashAndRecover(t *testing.T, dir, cp string) *clusterHost {
	t.Helper()
	state := filepath.Join(dir, "state")
	if err := os.RemoveAll(filepath.Join(state, "sieve")); err != nil {
		t.Fatal(err)
	}
	if _, err := restoreSeenAndCounts(cp, state); err != nil {
		t.Fatal(err)
	}
	return countedHost(t, dir)
}

// TestReturnCountsSurviveCrash: at a return, a key's count equals the URLs
// counted once — the returning agent's own plus those the interim owner
// admitted that it did not know — when the returning agent crashes
// between the seen parts and the counts part: with no checkpoint since
// its death, with one between the parts (and a seen part sent again after
// the crash), and between a part's sieve insert and its frame.
func TestReturnCountsSurviveCrash(t *testing.T) {
	for _, window := range []string{"after the seen parts", "checkpoint between the parts", "inside a seen part"} {
		t.Run(window, func(t *testing.T) { returnCrash(t, window) })
	}
}

func returnCrash(t *testing.T, window string) {
	dir := t.TempDir()
	cp0, cp1 := filepath.Join(t.TempDir(), "cp0"), filepath.Join(t.TempDir(), "cp1")
	h := countedHost(t, dir)
	const epoch = 5
	url := func(host string, i int) string { return fmt.Sprintf("http://%s/p/%d", host, i) }
	key := func(sa string) uint64 {
		return sieve.KeyHash(h.a.cfg.Frontier.Assign.GroupHash([]byte(sa)), []byte(sa))
	}
	hashes := func(host string, from, to int) (hs []uint64) {
		for i := from; i < to; i++ {
			hs = append(hs, hashOf(h, url(host, i)))
		}
		return hs
	}
	ka, kb, kbs := key("http://a.example.test"), key("http://b.example.test"), key("https://b.example.test")
	if sieve.Slot(kb) != sieve.Slot(kbs) {
		t.Fatal("http and https of one host in two slots")
	}
	// Before its death the agent admitted 10 URLs of a, 6 of b (http) and
	// 4 of b (https, same slot): in its sieve and counts; its checkpoint.
	own := append(append(hashes("a.example.test", 0, 10), hashes("b.example.test", 0, 6)...), hashes("b.example.test", 100, 104)...)
	if _, err := h.a.sieve.InsertHashes(own); err != nil {
		t.Fatal(err)
	}
	h.a.frontier.AddCounts(map[uint64]int64{ka: 10, kb: 6, kbs: 4})
	h.cutInto(t, cp0)
	// The interim owner admitted 4 of a's URLs it knew and 3 new, 5 of b's
	// it knew (http 0-2, https 100-101) and 2 new: its hand-back in three
	// parts, seen hashes first, its counts last.
	h.ho.known.returnEpoch.Store(epoch) // the return's view change (noteReturn)
	seenA := append(hashes("a.example.test", 0, 4), hashes("a.example.test", 50, 53)...)
	seenB := append(append(hashes("b.example.test", 0, 3), hashes("b.example.test", 100, 102)...), hashes("b.example.test", 50, 52)...)
	parts := []*cluster.Handoff{
		{From: "i", Epoch: epoch, Seq: 1, Seen: seenA},
		{From: "i", Epoch: epoch, Seq: 2, Seen: seenB},
		{From: "i", Epoch: epoch, Seq: 3, Counts: map[uint64]int64{ka: 7, kb: 5, kbs: 2}},
	}
	wantA, wantB := int64(10+3), int64(10+2)
	apply := func(h *clusterHost, p *cluster.Handoff) {
		t.Helper()
		if err := h.ApplyHandoff(p); err != nil {
			t.Fatal(err)
		}
	}
	holds := []cluster.PendingHold{{From: "i", Epoch: epoch, Slots: cluster.NewSlotSet(), Return: true}}
	switch window {
	case "after the seen parts":
		apply(h, parts[0])
		apply(h, parts[1])
		h = crashAndRecover(t, dir, cp0)
		h.ResumeHolds(holds, nil)
	case "checkpoint between the parts":
		apply(h, parts[0])
		h.cutInto(t, cp1)
		apply(h, parts[1])
		h = crashAndRecover(t, dir, cp1)
		h.ResumeHolds(holds, nil)
		apply(h, parts[1]) // its acknowledgement lost in the crash
	case "inside a seen part":
		apply(h, parts[0])
		if _, err := h.insertSeen(parts[1], true); err != nil { // killed before its frame
			t.Fatal(err)
		}
		h = crashAndRecover(t, dir, cp0)
		h.ResumeHolds(holds, nil)
		apply(h, parts[1]) // never acknowledged: sent again
	}
	apply(h, parts[2])
	got := h.a.frontier.SlotCounts(func(uint32) bool { return true })
	if got[ka] != wantA || got[kb]+got[kbs] != wantB {
		t.Fatalf("after the return: a counts %d (want %d), b %d+%d (want %d in all)", got[ka], wantA, got[kb], got[kbs], wantB)
	}
	// Recovered once more from the files: the same counts.
	cp2 := filepath.Join(t.TempDir(), "cp2")
	h.cutInto(t, cp2)
	h = crashAndRecover(t, dir, cp2)
	if got := h.a.frontier.SlotCounts(func(uint32) bool { return true }); got[ka] != wantA || got[kb]+got[kbs] != wantB {
		t.Fatalf("recovered after the return: a counts %d (want %d), b %d (want %d)", got[ka], wantA, got[kb]+got[kbs], wantB)
	}
}
