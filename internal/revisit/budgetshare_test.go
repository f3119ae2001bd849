package revisit

import (
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/frontier"
)

// TestBudgetShare: a schedule given a share of the budget plans for that
// share (uniform's interval grows as the share falls) and never for no
// budget at all.
func TestBudgetShare(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	s, err := Open(Config{Dir: t.TempDir(), Settings: Settings{Policy: PolicyUniform, Budget: 4, Min: 100 * time.Millisecond, Max: time.Hour},
		Issue: (&issued{}).issue, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	meta := frontier.Meta{Depth: 1}.Append(nil)
	visit := func(u string) time.Duration {
		t.Helper()
		due, err := s.Visited(u, meta, Visit{Time: clk.now(), Status: 200, Bytes: 100, Full: true})
		if err != nil {
			t.Fatal(err)
		}
		return due.Sub(clk.now())
	}
	for i := range 8 {
		visit("http://a.test/" + string(rune('a'+i)))
	}
	if d := visit("http://a.test/a"); d != 2*time.Second {
		t.Fatalf("whole budget: interval %v, want 8 URLs / 4 a second = 2s", d)
	}
	s.SetShare(0.5)
	if b := s.Figures().Budget; b != 2 {
		t.Fatalf("half the budget: %v a second, want 2", b)
	}
	if d := visit("http://a.test/b"); d != 4*time.Second {
		t.Fatalf("half the budget: interval %v, want 4s", d)
	}
	s.SetShare(0)
	if b := s.pol.rates.Budget(); b != 4*minShare || b <= 0 {
		t.Fatalf("no share: budget %v a second, want %v (never none)", b, 4*minShare)
	}
}
