package topn

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTopAgreesWithSort checks that Top keeps exactly the n greatest of a
// stream, greatest first, against a full sort, for n below, at and above
// the stream's length.
func TestTopAgreesWithSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, m := range []int{0, 1, 7, 1000} {
		for _, n := range []int{0, 1, 3, 50, 2000} {
			vals := make([]int, m)
			for i := range vals {
				vals[i] = r.IntN(100) // many ties
			}
			top := New(n, func(a, b int) bool { return a < b })
			for _, v := range vals {
				top.Push(v)
			}
			if top.Len() != min(n, m) {
				t.Fatalf("m=%d n=%d: holds %d", m, n, top.Len())
			}
			got := top.Sorted()
			want := slices.Clone(vals)
			slices.SortFunc(want, func(a, b int) int { return b - a })
			want = want[:min(n, m)]
			if !slices.Equal(got, want) {
				t.Fatalf("m=%d n=%d: got %v, want %v", m, n, got, want)
			}
		}
	}
}
