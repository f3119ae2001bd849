package agent

import (
	"maps"
	"slices"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/sieve"
)

// The budget counts at a return. An interim owner of a dead agent's keys
// counted from zero the URLs it admitted, some of which the dead agent
// had admitted (and counted) before: adding its counts to the returning
// agent's own would count those twice. The hashes of the handed-back seen
// set that the returning agent's sieve held already are those URLs
// (clusterreturn.go). As each seen part of the return is applied, its
// known hashes are taken off this agent's own counts of their slots'
// keys, in the same frame of the log of received counts as the part's
// own counts (countslog.go): by all of them when the slot has one key
// (exact), shared out in proportion to the counts when it has several
// (exact in total), never below zero. The counts handed back are then
// added whole. Nothing of the correction is kept in RAM between parts,
// so a crash between the seen parts and the counts parts loses none of
// it and applies none twice:
//
//   - a part whose frame is in the log was applied: sent again, its seen
//     hashes go into the sieve again (where they are: in the checkpoint's
//     sieve, or replayed from the log) and nothing else is done — its
//     correction and counts are in the checkpoint's counts or replayed
//     from the log;
//   - a part whose frame is not in the log is applied as if new: a
//     checkpoint never falls between a part's sieve insert and its frame
//     (handoffState.cut), so the sieve restored after a crash lacks its
//     hashes and finds the same ones known;
//   - which epoch is a return survives a restart with the holds of its
//     releases (cluster.PendingHold.Return, resumeReturn).

// applySeenAndCounts applies a part's seen hashes and budget counts (a
// part of the return at the return's epoch: with the correction above).
func (h *clusterHost) applySeenAndCounts(p *cluster.Handoff) error {
	ret := p.Epoch == h.ho.known.returnEpoch.Load()
	if len(p.Seen) == 0 && len(p.Counts) == 0 {
		return nil
	}
	l, err := h.receivedCounts()
	if err != nil {
		return err
	}
	h.ho.cut.Lock()
	defer h.ho.cut.Unlock()
	id := p.ID()
	applied := l.has(id)
	var known []uint64
	if len(p.Seen) > 0 {
		if known, err = h.insertSeen(p, ret && !applied); err != nil { // clusterreturn.go
			return err
		}
		h.a.stats.ReceivedSeen.Add(int64(len(p.Seen)))
	}
	if applied {
		return nil
	}
	delta := maps.Clone(p.Counts)
	if delta == nil {
		delta = map[uint64]int64{}
	}
	if len(known) > 0 {
		slots := map[uint32]bool{}
		for _, hh := range known {
			slots[sieve.Slot(hh)] = true
		}
		own := h.a.frontier.SlotCounts(func(s uint32) bool { return slots[s] })
		for k, c := range takeOffKnown(own, known) {
			delta[k] += c
		}
	}
	// Every part is logged, with its seen hashes, even with no count to
	// add: its id then says it was applied, and crash recovery puts its
	// seen hashes back into the sieve it restores.
	return l.apply(id, p.Seen, delta, h.a.frontier.AddCounts)
}

// takeOffKnown returns what to add to own (this agent's counts of the
// slots of known, by count key) so that each slot's keys lose one URL per
// known hash of the slot: negative counts, shared out among a slot's keys
// in proportion to their counts (the rounding's remainder in key order),
// never taking a key below zero.
func takeOffKnown(own map[uint64]int64, known []uint64) map[uint64]int64 {
	bySlot := map[uint32][]uint64{}
	for _, k := range slices.Sorted(maps.Keys(own)) {
		bySlot[sieve.Slot(k)] = append(bySlot[sieve.Slot(k)], k)
	}
	perSlot := map[uint32]int64{}
	for _, hh := range known {
		perSlot[sieve.Slot(hh)]++
	}
	out := map[uint64]int64{}
	for s, n := range perSlot {
		keys := bySlot[s]
		var total int64
		for _, k := range keys {
			total += max(own[k], 0)
		}
		off := min(n, total)
		left := off
		sub := make([]int64, len(keys))
		for i, k := range keys {
			if total > 0 {
				sub[i] = off * max(own[k], 0) / total
			}
			left -= sub[i]
		}
		for i, k := range keys { // the rounding's remainder, in key order
			take := min(left, max(own[k], 0)-sub[i])
			sub[i], left = sub[i]+take, left-take
			if sub[i] > 0 {
				out[k] = -sub[i]
			}
		}
	}
	return out
}

// resumeReturn makes the parts of a return whose releases an earlier
// process awaited the parts of a return again (holds: those it resumes).
func (h *clusterHost) resumeReturn(holds []cluster.PendingHold) {
	for _, p := range holds {
		if p.Return && p.Epoch > h.ho.known.returnEpoch.Load() {
			h.ho.known.returnEpoch.Store(p.Epoch)
		}
	}
}

// holdCut keeps hand-off parts from being applied until the returned
// release: a checkpoint's cut then holds each part's seen hashes and its
// frame of counts both or neither.
func (h *clusterHost) holdCut() (release func()) {
	if h == nil {
		return func() {}
	}
	h.ho.cut.Lock()
	return h.ho.cut.Unlock
}
