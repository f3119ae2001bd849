package agent

import (
	"maps"
	"slices"
	"sync"

	"github.com/petrel-crawler/petrel/internal/sieve"
)

// The budget counts handed back at a return. An interim owner of a dead
// agent's keys counted from zero the URLs it admitted, some of which the
// dead agent had admitted (and counted) before: adding its counts to the
// returning agent's own would count those twice. The hashes of the
// handed-back seen set that the returning agent knew are those URLs
// (clusterreturn.go); every seen hash of a hand-off comes in a part
// before its counts (cluster.HandoffParts), so when the counts come, the
// known hashes of each slot are all in, and each key's count handed back
// is lessened by them: by all of them when the slot has one key (the
// count is then exact), shared out in proportion to the counts when it
// has several (in total exact), never below zero.

// returnCounts holds, per slot, the known hashes of a return not yet
// taken off a count handed back.
type returnCounts struct {
	mu    sync.Mutex
	epoch uint64
	known map[uint32]int64
}

// noteKnown adds the known hashes of a part of the return at epoch.
func (r *returnCounts) noteKnown(epoch uint64, known []uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.epoch != epoch || r.known == nil {
		r.epoch, r.known = epoch, map[uint32]int64{}
	}
	for _, h := range known {
		r.known[sieve.Slot(h)]++
	}
}

// adjust returns counts, handed back at the return at epoch, less the
// URLs of their slots this agent had counted already; what it takes off
// is spent.
func (r *returnCounts) adjust(epoch uint64, counts map[uint64]int64) map[uint64]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.epoch != epoch || len(r.known) == 0 {
		return counts
	}
	bySlot := map[uint32][]uint64{}
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		bySlot[sieve.Slot(k)] = append(bySlot[sieve.Slot(k)], k)
	}
	out := make(map[uint64]int64, len(counts))
	for s, keys := range bySlot {
		var total int64
		for _, k := range keys {
			total += max(counts[k], 0)
		}
		off := min(r.known[s], total)
		r.known[s] -= off
		left := off
		for _, k := range keys {
			c := max(counts[k], 0)
			var sub int64
			if total > 0 {
				sub = off * c / total
			}
			out[k], left = c-sub, left-sub
		}
		for _, k := range keys { // the rounding's remainder, in key order
			take := min(left, out[k])
			out[k], left = out[k]-take, left-take
		}
	}
	return out
}
