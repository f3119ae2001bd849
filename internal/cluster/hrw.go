package cluster

import (
	"math"

	"github.com/cespare/xxhash/v2"
)

// Owner returns the agent of v that owns the group, by weighted rendezvous
// (highest random weight) hashing: every agent draws a pseudo-random
// number in (0, 1) from the pair (group, agent), scores it as
// weight / -ln(draw), and the highest score owns the group. Adding an agent
// moves to it exactly the groups it now wins, and nothing between the
// others; removing one moves only its own groups. Owner returns "" for an
// empty view. It allocates nothing.
func (v *View) Owner(group string) string {
	i := v.ownerIndex(xxhash.Sum64String(group))
	if i < 0 {
		return ""
	}
	return v.Agents[i].Name
}

// OwnerBytes is Owner for a group held in a byte slice.
func (v *View) OwnerBytes(group []byte) string {
	i := v.ownerIndex(xxhash.Sum64(group))
	if i < 0 {
		return ""
	}
	return v.Agents[i].Name
}

// ownerIndex returns the index in v.Agents of the owner of the group whose
// hash is gh, or -1.
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
