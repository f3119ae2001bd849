package cluster

import (
	"math"

	"github.com/cespare/xxhash/v2"

	"github.com/petrel-crawler/petrel/internal/sieve"
)

// SlotBits is the width of a slot: a group belongs to the slot made of
// the top SlotBits bits of its xxhash, and ownership is decided per slot.
// It is the sieve's GroupBits, so that the sieve's entries for the groups
// of a set of slots are found in one sequential pass of its store.
const SlotBits = sieve.GroupBits

// Slots is the number of slots.
const Slots = 1 << SlotBits

// SlotOf returns the slot of a group.
func SlotOf(group string) uint32 { return sieve.Slot(xxhash.Sum64String(group)) }

// Owner returns the agent of v that owns the group: the owner of its slot
// (OwnerOfSlot).
func (v *View) Owner(group string) string {
	return v.OwnerOfSlot(SlotOf(group))
}

// OwnerBytes is Owner for a group held in a byte slice.
func (v *View) OwnerBytes(group []byte) string {
	return v.OwnerOfSlot(sieve.Slot(xxhash.Sum64(group)))
}

// OwnerOfSlot returns the agent of v that owns the slot, by weighted
// rendezvous (highest random weight) hashing: every agent draws a
// pseudo-random number in (0, 1) from the pair (slot, agent), scores it as
// weight / -ln(draw), and the highest score owns the group. Adding an agent
// moves to it exactly the groups it now wins, and nothing between the
// others; removing one moves only its own slots. It returns "" for an
// empty view. It allocates nothing.
func (v *View) OwnerOfSlot(slot uint32) string {
	i := v.ownerIndex(uint64(slot))
	if i < 0 {
		return ""
	}
	return v.Agents[i].Name
}

// ownerIndex returns the index in v.Agents of the owner of the slot gh, or
// -1.
func (v *View) ownerIndex(gh uint64) int {
	best, bestScore := -1, math.Inf(-1)
	var bestDraw uint64
	if v.uniform {
		// Equal weights: the largest draw has the largest score.
		for i, seed := range v.seeds {
			if d := mix64(gh ^ seed); best < 0 || d > bestDraw {
				best, bestDraw = i, d
			}
		}
		return best
	}
	for i, seed := range v.seeds {
		d := mix64(gh ^ seed)
		u := (float64(d>>11) + 0.5) / (1 << 53) // in (0, 1)
		s := float64(v.Agents[i].Weight) / -math.Log(u)
		if s > bestScore {
			best, bestScore = i, s
		}
	}
	return best
}

// mix64 is SplitMix64's finaliser: a bijection of 64-bit words whose
// output bits each depend on every input bit.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
