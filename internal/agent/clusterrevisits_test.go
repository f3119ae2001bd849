package agent

import (
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/revisit"
)

// TestRevisitBudgetShared: in a crawl of several agents each agent's
// schedule spends its share of --revisit-budget, set again as views
// change, so that the agents together spend it once.
func TestRevisitBudgetShared(t *testing.T) {
	h := returnHost(t)
	s, err := revisit.Open(revisit.Config{Dir: t.TempDir(), Settings: revisit.Settings{On: true, Policy: revisit.PolicyUniform,
		Budget: 9, Min: time.Second, Max: time.Hour}, Issue: func([]byte) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h.a.revisits = s
	for _, c := range []struct {
		agents []string
		want   float64
	}{{[]string{"c"}, 9}, {[]string{"a", "b", "c"}, 3}, {[]string{"a", "c"}, 4.5}} {
		h.a.shareRevisitBudget(testView(t, 1, c.agents...))
		if got := s.Figures().Budget; got != c.want {
			t.Errorf("view of %v: budget %v a second, want %v", c.agents, got, c.want)
		}
	}
}
