package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// admitted offers urls to h's frontier, flushes its sieve, and returns
// how many of them the sieve found new.
func admitted(t *testing.T, h *clusterHost, urls []string) int64 {
	t.Helper()
	before := h.a.stats.SieveNew.Load()
	for _, s := range urls {
		u, err := urlx.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.a.frontier.Enqueue(u, frontier.Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.a.sieve.Flush(); err != nil {
		t.Fatal(err)
	}
	return h.a.stats.SieveNew.Load() - before
}

// TestReceivedSeenSurviveCrash: the seen hashes of a hand-off part applied
// after the receiver's last checkpoint are in its sieve after a crash
// (the process abandoned, nothing closed; recovered from the files), so
// none of the part's URLs offered again is admitted, while URLs of no
// part are; a second crash before the next checkpoint recovers the same;
// and once a checkpoint covers the part, the log's trim drops its seen
// hashes and keeps its id.
func TestReceivedSeenSurviveCrash(t *testing.T) {
	dir := t.TempDir()
	cp0, cp1 := filepath.Join(t.TempDir(), "cp0"), filepath.Join(t.TempDir(), "cp1")
	h := countedHost(t, dir)
	h.cutInto(t, cp0)
	url := func(i int) string { return fmt.Sprintf("http://s%d.example.test/p/%d", i%3, i) }
	var seen []uint64
	var old, fresh []string
	for i := range 40 {
		old, fresh = append(old, url(i)), append(fresh, url(1000+i))
		seen = append(seen, hashOf(h, url(i)))
	}
	p := &cluster.Handoff{From: "o", Epoch: 4, Seq: 1, Seen: seen[:30]}
	q := &cluster.Handoff{From: "o", Epoch: 4, Seq: 2, Seen: seen[30:], Counts: map[uint64]int64{7: 2}}
	for _, part := range []*cluster.Handoff{p, q} {
		if err := h.ApplyHandoff(part); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 2 {
		h = crashAndRecover(t, dir, cp0)
		if _, err := os.Stat(filepath.Join(dir, "state", replayFile)); !os.IsNotExist(err) {
			t.Fatalf("crash %d: the replay's marker is left after the sieve opened (%v)", round+1, err)
		}
		if n := admitted(t, h, old[round*20:round*20+20]); n != 0 {
			t.Fatalf("crash %d: %d of 20 URLs of the parts applied after the checkpoint admitted again", round+1, n)
		}
		if n := admitted(t, h, fresh[round*20:round*20+20]); n != 20 {
			t.Fatalf("crash %d: %d of 20 URLs of no part admitted, want 20", round+1, n)
		}
	}
	if err := h.ApplyHandoff(q); err != nil { // sent again: its acknowledgement lost
		t.Fatal(err)
	}
	if got := h.a.frontier.SlotCounts(func(uint32) bool { return true })[7]; got != 2 {
		t.Fatalf("count of the part with counts: %d after the crashes and a resend, want 2", got)
	}
	// A checkpoint covers the parts: the trim keeps only their ids.
	h.cutInto(t, cp1)
	l, err := h.receivedCounts()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.trim(readReceivedPos(cp1)); err != nil {
		t.Fatal(err)
	}
	_, frames, _, err := readCountsLog(filepath.Join(dir, "state", receivedFile))
	if err != nil || len(frames) != 2 || len(frames[0].seen)+len(frames[1].seen) != 0 || !l.has(p.ID()) || !l.has(q.ID()) {
		t.Fatalf("after the trim: %d frames, %v", len(frames), err)
	}
}
