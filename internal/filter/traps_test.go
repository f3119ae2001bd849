package filter

import (
	"strings"
	"testing"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

func TestTrapsCheck(t *testing.T) {
	long := "http://a.test/" + strings.Repeat("x", 2100)
	cases := []struct {
		name      string
		traps     Traps
		url       string
		depth     int
		redirects int
		want      Cut
	}{
		{"plain", DefaultTraps(), "http://a.test/p/1.html", 3, 0, Keep},
		{"long", DefaultTraps(), long, 0, 0, CutLength},
		{"long but unlimited", Traps{}, long, 0, 0, Keep},
		{"exactly 2 KiB", DefaultTraps(), "http://a.test/" + strings.Repeat("x", 2048-len("http://a.test/")), 0, 0, Keep},
		{"port counts", Traps{MaxLength: 20}, "http://a.test:8080/abc", 0, 0, CutLength},
		{"4 redirects", DefaultTraps(), "http://a.test/chain/5", 0, 4, Keep},
		{"5 redirects", DefaultTraps(), "http://a.test/chain/6", 0, 5, CutRedirects},
		{"depth unlimited by default", DefaultTraps(), "http://a.test/", 60000, 0, Keep},
		{"depth at limit", Traps{MaxDepth: 3}, "http://a.test/", 3, 0, Keep},
		{"depth over limit", Traps{MaxDepth: 3}, "http://a.test/", 4, 0, CutDepth},
		{"segment thrice", DefaultTraps(), "http://a.test/a/a/a/", 0, 0, Keep},
		{"segment four times", DefaultTraps(), "http://a.test/a/a/a/a/", 0, 0, CutRepeatedSegment},
		{"alternating", DefaultTraps(), "http://a.test/x/y/x/y/x/y/x/y", 0, 0, CutRepeatedSegment},
		{"empty segments ignored", DefaultTraps(), "http://a.test/a//////b", 0, 0, Keep},
		{"query not a segment", DefaultTraps(), "http://a.test/a?x=/a/a/a/a", 0, 0, Keep},
		{"length before redirects", DefaultTraps(), long, 0, 9, CutLength},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u, err := urlx.Parse(c.url)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.traps.Check(u, c.depth, c.redirects); got != c.want {
				t.Errorf("Check(%s, %d, %d) = %v, want %v", c.url, c.depth, c.redirects, got, c.want)
			}
		})
	}
}

func TestURLLength(t *testing.T) {
	for _, s := range []string{"http://a.test/", "https://a.test:8443/x?y=1", "http://[::1]:81/p"} {
		u, err := urlx.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := URLLength(u), len(u.String()); got != want {
			t.Errorf("URLLength(%s) = %d, want %d", s, got, want)
		}
	}
}

func TestMaxSegmentRepeats(t *testing.T) {
	cases := []struct {
		path string
		want int
	}{
		{"", 0}, {"/", 0}, {"/a", 1}, {"/a/b/a", 2}, {"/a/a/a/a/", 4},
		{strings.Repeat("/s", 40), 40},
	}
	for _, c := range cases {
		if got := MaxSegmentRepeats(c.path); got != c.want {
			t.Errorf("MaxSegmentRepeats(%q) = %d, want %d", c.path, got, c.want)
		}
	}
}

func BenchmarkTrapsCheck(b *testing.B) {
	u, _ := urlx.Parse("http://a.test/one/two/three/four/five/page.html?q=1")
	tr := DefaultTraps()
	b.ReportAllocs()
	for b.Loop() {
		tr.Check(u, 5, 0)
	}
}
