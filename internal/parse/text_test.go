package parse

import (
	"strings"
	"testing"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

// TestFeedTextMatchesSeparateFeeds checks that the fused text loop gives
// the digest and the SimHash exactly what the two separate feeds give.
func TestFeedTextMatchesSeparateFeeds(t *testing.T) {
	base, _ := urlx.Parse("http://a.test/")
	texts := [][]byte{
		[]byte("Hello World 2026, the   QUICK brown\tfox\n"),
		[]byte("a\x00b 12ab34 ÉTÉ été"),
		[]byte("   "), []byte("x"), []byte("Ends in a word"), []byte(" and continues"),
	}
	var d1, d2 digester
	var s1, s2 simhasher
	d1.init(base)
	d2.init(base)
	s1.init()
	s2.init()
	for _, tx := range texts {
		d1.text(tx)
		s1.text(tx)
		feedText(&d2, &s2, tx)
		d1.tag(false, []byte("p"), nil)
		d2.tag(false, []byte("p"), nil)
		s1.endWord()
		s2.endWord()
	}
	if d1.sum() != d2.sum() {
		t.Error("digest differs between the fused and the separate feeds")
	}
	h1, n1 := s1.sum()
	h2, n2 := s2.sum()
	if h1 != h2 || n1 != n2 {
		t.Errorf("SimHash %x/%d vs %x/%d", h1, n1, h2, n2)
	}
}

// BenchmarkFeedText measures the fused text loop on ~20 KiB of words of
// the synthetic web's kind (syllable words of 2 to 8 letters).
func BenchmarkFeedText(b *testing.B) {
	text := []byte(strings.Repeat("frorebo clezuve frorula kahibra clese lebraga vodri pawaku le boya le tiyaku glucle fivi. ", 220))
	base, _ := urlx.Parse("http://a.test/")
	b.SetBytes(int64(len(text)))
	var d digester
	var s simhasher
	for b.Loop() {
		d.init(base)
		s.init()
		feedText(&d, &s, text)
		d.sum()
		s.sum()
	}
}
