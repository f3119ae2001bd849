package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/petrel-crawler/petrel/internal/sieve"
)

func agents(n int) []ViewAgent {
	as := make([]ViewAgent, n)
	for i := range as {
		as[i] = ViewAgent{Name: fmt.Sprintf("agent-%03d", i)}
	}
	return as
}

func mustView(t testing.TB, epoch uint64, as []ViewAgent) *View {
	t.Helper()
	v, err := NewView(epoch, as)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// groupName is the i-th synthetic host name of the balance tests.
func groupName(i int) string { return "h" + strconv.Itoa(i) + ".example.test" }

const balanceNames = 1_000_000

// groupHashes are the slots of the balance tests' names (what ownerIndex
// takes), computed once.
var groupHashes = func() []uint64 {
	hs := make([]uint64, balanceNames)
	for i := range hs {
		hs[i] = uint64(sieve.Slot(xxhash.Sum64String(groupName(i))))
	}
	return hs
}()

func TestHRWBalance(t *testing.T) {
	for _, n := range []int{3, 10, 100} {
		v := mustView(t, 1, agents(n))
		count := make([]int, n)
		for _, h := range groupHashes {
			count[v.ownerIndex(h)]++
		}
		if slices.Contains(count, 0) {
			t.Fatalf("%d agents: only %d own keys", n, len(count))
		}
		maxKeys := 0
		for _, c := range count {
			maxKeys = max(maxKeys, c)
		}
		mean := float64(balanceNames) / float64(n)
		ratio := float64(maxKeys) / mean
		t.Logf("%d agents: max/mean = %.4f", n, ratio)
		if ratio > 1.05 {
			t.Errorf("%d agents: max/mean keys = %.4f, want ≤ 1.05", n, ratio)
		}
	}
}

func TestHRWMovement(t *testing.T) {
	for _, n := range []int{3, 10, 100} {
		before := mustView(t, 1, agents(n-1))
		after := mustView(t, 2, agents(n))
		// The agents sort by name, so the newcomer is the last, and the
		// others keep their indexes.
		newcomer := n - 1
		moved := 0
		for i, h := range groupHashes {
			a, b := before.ownerIndex(h), after.ownerIndex(h)
			if a == b {
				continue
			}
			if b != newcomer {
				t.Fatalf("%d agents: %s moved from %d to %d, not to the newcomer", n, groupName(i), a, b)
			}
			moved++
		}
		want := float64(balanceNames) / float64(n)
		dev := (float64(moved) - want) / want
		t.Logf("adding agent %d: %d moved (%+.2f %% of 1/N)", n, moved, 100*dev)
		if dev < -0.10 || dev > 0.10 {
			t.Errorf("adding agent %d moved %d keys, want %.0f ± 10 %%", n, moved, want)
		}
	}
}

func TestHRWWeighted(t *testing.T) {
	v := mustView(t, 1, []ViewAgent{{Name: "a", Weight: 1}, {Name: "b", Weight: 3}})
	count := map[string]int{}
	for i := 0; i < 200_000; i++ {
		count[v.Owner(groupName(i))]++
	}
	share := float64(count["b"]) / 200_000
	if share < 0.73 || share > 0.77 {
		t.Errorf("weight 3 of 4 owns %.3f of keys, want 0.75 ± 0.02", share)
	}
}

func TestViewRejects(t *testing.T) {
	if _, err := NewView(1, []ViewAgent{{Name: "a"}, {Name: "a"}}); err == nil {
		t.Error("duplicate names accepted")
	}
	if _, err := NewView(1, []ViewAgent{{Name: ""}}); err == nil {
		t.Error("empty name accepted")
	}
	if (&View{}).Owner("x") != "" {
		t.Error("empty view has an owner")
	}
}

func BenchmarkOwner10(b *testing.B) {
	v := mustView(b, 1, agents(10))
	for i := 0; b.Loop(); i++ {
		v.Owner(groupName(i & 1023))
	}
}

// TestMoves: adding an agent moves slots only to it, about 1/N of them,
// and Moves finds exactly those.
func TestMoves(t *testing.T) {
	old := mustView(t, 1, agents(3))
	next, err := NextView(old, []ViewAgent{{Name: "agent-new"}})
	if err != nil {
		t.Fatal(err)
	}
	moves := Moves(old, next)
	n := 0
	for from, to := range moves {
		for dest, set := range to {
			if dest != "agent-new" {
				t.Fatalf("a slot moved from %s to %s", from, dest)
			}
			for s := uint32(0); s < Slots; s++ {
				if set.Has(s) {
					n++
					if old.OwnerOfSlot(s) != from || next.OwnerOfSlot(s) != dest {
						t.Fatalf("slot %d: %s → %s, Moves says %s → %s", s, old.OwnerOfSlot(s), next.OwnerOfSlot(s), from, dest)
					}
				}
			}
		}
	}
	if share := float64(n) / Slots; share < 0.24 || share > 0.26 {
		t.Fatalf("%.3f of the slots moved, want about 1/4", share)
	}
}

// NextView returns the agents of the view that follows v with the agents
// add joined (a name already in v takes the new weight) and the agents
// named in remove gone, under epoch v's plus one. v's absentees stay
// absent unless added.
func NextView(v *View, add []ViewAgent, remove ...string) (*View, error) {
	var as []ViewAgent
	for _, a := range v.Agents {
		if !slices.Contains(remove, a.Name) && !slices.ContainsFunc(add, func(b ViewAgent) bool { return b.Name == a.Name }) {
			as = append(as, a)
		}
	}
	for _, a := range add {
		if !slices.Contains(remove, a.Name) {
			as = append(as, a)
		}
	}
	if len(as) == 0 {
		return nil, errors.New("cluster: a view needs at least one agent")
	}
	nv, err := NewView(v.Epoch+1, as)
	if err == nil {
		nv.Absent = slices.DeleteFunc(slices.Clone(v.Absent), func(n string) bool { return nv.Has(n) })
	}
	return nv, err
}

// TestViewShare: an agent's share of the keys is its weight over the
// owners'; an agent not an owner has none.
func TestViewShare(t *testing.T) {
	v, err := NewView(7, []ViewAgent{{Name: "a1"}, {Name: "a2", Weight: 2}, {Name: "a3"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{"a1": 0.25, "a2": 0.5, "a3": 0.25, "a4": 0} {
		if got := v.Share(name); got != want {
			t.Errorf("Share(%s) = %v, want %v", name, got, want)
		}
	}
}
