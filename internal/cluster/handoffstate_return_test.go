package cluster

import (
	"path/filepath"
	"testing"
)

// TestPendingHoldsNameReturn: the holds a restart resumes say whether their
// view brought this agent back after a death, from what was saved before
// that view was in force; a join's holds do not.
func TestPendingHoldsNameReturn(t *testing.T) {
	for _, tc := range []struct {
		name string
		old  *View
		want bool
	}{
		{"return", func() *View {
			v := mustView(t, 3, []ViewAgent{{Name: "a"}, {Name: "b"}})
			v.Absent = []string{"c"}
			return v
		}(), true},
		{"join", mustView(t, 3, []ViewAgent{{Name: "a"}, {Name: "b"}}), false},
	} {
		v := mustView(t, 4, []ViewAgent{{Name: "a"}, {Name: "b"}, {Name: "c"}})
		dir := filepath.Join(t.TempDir(), "c")
		pre := &Node{cfg: Config{Name: "c", Dir: dir}}
		if err := pre.ho.load(dir); err != nil {
			t.Fatal(err)
		}
		if _, err := pre.expectReleases(tc.old, v); err != nil {
			t.Fatal(err)
		}
		// The restarted process reads the saved state.
		n := &Node{cfg: Config{Name: "c", Dir: dir}}
		if err := n.ho.load(dir); err != nil {
			t.Fatal(err)
		}
		holds, _ := n.pendingHolds()
		if len(holds) != 2 {
			t.Fatalf("%s: %d holds, want 2 (from a and b)", tc.name, len(holds))
		}
		for _, p := range holds {
			if p.Return != tc.want || p.Epoch != 4 {
				t.Errorf("%s: hold from %s at epoch %d: Return %v, want %v", tc.name, p.From, p.Epoch, p.Return, tc.want)
			}
		}
	}
}
