package cluster

import (
	"maps"
	"slices"
)

// maxCountEntryBytes is the most one budget count takes in a part's JSON
// header: a quoted uint64 key, a colon, an int64 and a comma.
const maxCountEntryBytes = len(`"18446744073709551615":-9223372036854775808,`)

// handoffPartRoom is what a part's counts and seen hashes may take on the
// wire: MaxHandoffBytes less room for the header's own framing.
const handoffPartRoom = MaxHandoffBytes - maxControlBytes

// HandoffCountsPerPart is the most budget counts a sender puts in one part.
const HandoffCountsPerPart = handoffPartRoom / maxCountEntryBytes

// HandoffParts splits what one old owner gives one new owner at epoch —
// its seen hashes and its keys' budget counts — into parts numbered from
// firstSeq, each within MaxHandoffBytes on the wire: the seen hashes
// first, then the counts in ascending key order filling what room is left
// (so a part's counts come after every seen hash of the hand-off: a
// returning agent corrects the counts by the hashes it knew; and a
// hand-off resumed with the same counts numbers the same parts the same
// way). There is always at least one part.
func HandoffParts(epoch, firstSeq uint64, seen []uint64, counts map[uint64]int64) []*Handoff {
	keys := slices.Sorted(maps.Keys(counts))
	var parts []*Handoff
	for first := true; first || len(keys) > 0 || len(seen) > 0; first = false {
		p := &Handoff{Epoch: epoch, Seq: firstSeq + uint64(len(parts))}
		s := min(len(seen), handoffPartRoom/8)
		p.Seen, seen = seen[:s], seen[s:]
		c := min(len(keys), (handoffPartRoom-8*s)/maxCountEntryBytes)
		if c > 0 {
			p.Counts = make(map[uint64]int64, c)
			for _, k := range keys[:c] {
				p.Counts[k] = counts[k]
			}
			keys = keys[c:]
		}
		parts = append(parts, p)
	}
	return parts
}
