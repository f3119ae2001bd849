package agent

import (
	"testing"

	"github.com/petrel-crawler/petrel/internal/sieve"
)

// inSlot returns a hash (a count key or a seen hash) of slot s.
func inSlot(s uint32, low uint64) uint64 { return uint64(s)<<(64-sieve.GroupBits) | low }

// TestReturnCountsNotTwice: at a return, a key's count handed back is
// lessened by the URLs of its slot that the returning agent had counted
// itself (the known hashes of the handed-back seen set), so own + handed
// back counts each URL once: exactly for a slot of one key, in total for a
// slot of several; never below zero; a known hash is spent once; counts
// of another epoch's hand-off are added whole.
func TestReturnCountsNotTwice(t *testing.T) {
	var r returnCounts
	const epoch = 5
	// The returning agent knew 3 URLs of slot 1, 4 of slot 2, 9 of slot 3.
	var known []uint64
	for i := range 3 {
		known = append(known, inSlot(1, uint64(100+i)))
	}
	for i := range 4 {
		known = append(known, inSlot(2, uint64(200+i)))
	}
	r.noteKnown(epoch, known[:5]) // two parts of seen hashes
	r.noteKnown(epoch, known[5:])
	nine := make([]uint64, 9)
	for i := range nine {
		nine[i] = inSlot(3, uint64(300+i))
	}
	r.noteKnown(epoch, nine)
	if got := r.adjust(epoch+1, map[uint64]int64{inSlot(1, 1): 10}); got[inSlot(1, 1)] != 10 {
		t.Fatalf("counts of another epoch adjusted: %v", got)
	}
	// The interim owner counted 10 URLs of slot 1's key, 3 and 5 of slot
	// 2's two keys, 2 of slot 3's key (it found fewer than the agent knew),
	// 6 of slot 4's (none known).
	k1, k2a, k2b, k3, k4 := inSlot(1, 1), inSlot(2, 1), inSlot(2, 2), inSlot(3, 1), inSlot(4, 1)
	got := r.adjust(epoch, map[uint64]int64{k1: 10, k2a: 3, k2b: 5, k3: 2, k4: 6})
	want := map[uint64]int64{k1: 7, k3: 0, k4: 6}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("count of slot %d key %x: %d, want %d", sieve.Slot(k), k, got[k], v)
		}
	}
	if got[k2a]+got[k2b] != 8-4 || got[k2a] < 0 || got[k2b] < 0 || got[k2a] > 3 || got[k2b] > 5 {
		t.Errorf("slot 2's keys: %d and %d, want 4 in all, each within its count", got[k2a], got[k2b])
	}
	// What was taken off is spent: a later part's count of slot 1 is
	// added whole; slot 3's known hashes its first count (2) did not use
	// up (7 left) lessen its later one.
	again := r.adjust(epoch, map[uint64]int64{k1: 2, k3: 9})
	if again[k1] != 2 || again[k3] != 2 {
		t.Errorf("a later part: %v, want slot 1's 2 whole and slot 3's 9 less the 7 known left", again)
	}
}
