package revisit

import (
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/frontier"
)

// TestSitemapHints: a changefreq given before the first visit sets the
// URL's first interval; a lastmod after the last visit makes a scheduled
// URL due at once; a lastmod before it, or in the future, changes nothing.
func TestSitemapHints(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	is := &issued{}
	s := openTest(t, t.TempDir(), clk, is, false) // heritrix, Min 1 s, Max 10 s
	defer s.Close()
	meta := frontier.Meta{Depth: 1}.Append(nil)
	hinted, plain := "http://a.test/hinted", "http://a.test/plain"
	if err := s.Hints([]Hinted{{hinted, Hint{Period: 2 * time.Second}}}); err != nil {
		t.Fatal(err)
	}
	if f := s.Figures(); f.Hints != 1 {
		t.Fatalf("figures %+v: want one hint held", f)
	}
	t0 := clk.now()
	for _, u := range []string{hinted, plain} {
		if _, err := s.Visited(u, meta, Visit{Time: t0, Status: 200, Full: true}); err != nil {
			t.Fatal(err)
		}
	}
	st, _, _ := s.Lookup(hinted)
	if st.Hint != int64(2*time.Second) || st.Due != t0.Add(3*time.Second).UnixNano() {
		t.Fatalf("hinted: %+v; want its first interval from the 2 s changefreq (×1.5 unchanged)", st)
	}
	if st, _, _ := s.Lookup(plain); st.Due != t0.Add(10*time.Second).UnixNano() {
		t.Fatalf("plain: due in %v, want 10 s", time.Duration(st.Due-t0.UnixNano()))
	}
	if f := s.Figures(); f.Hints != 0 {
		t.Fatalf("figures %+v: the hint was not taken by the first visit", f)
	}
	clk.add(2 * time.Second)
	for _, lm := range []time.Time{t0.Add(-time.Second), clk.now().Add(time.Hour)} {
		if err := s.Hints([]Hinted{{plain, Hint{LastMod: lm}}}); err != nil {
			t.Fatal(err)
		}
	}
	if n, _, err := s.issueDue(clk.now(), 10); n != 0 || err != nil {
		t.Fatalf("issued %d after a stale and a future lastmod (%v)", n, err)
	}
	if err := s.Hints([]Hinted{{plain, Hint{LastMod: t0.Add(time.Second)}}}); err != nil {
		t.Fatal(err)
	}
	if n, _, err := s.issueDue(clk.now(), 10); n != 1 || err != nil {
		t.Fatalf("issued %d after a lastmod since the last visit, want 1 (%v)", n, err)
	}
	if got := is.take(); len(got) != 1 || got[0] != plain {
		t.Fatalf("issued %v", got)
	}
	if f := s.Figures(); f.HintedDue != 1 {
		t.Fatalf("figures %+v: want one URL made due by a lastmod", f)
	}
}
