package parse

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

// twinFeeds feeds the same text to the byte-at-a-time feeds (d1, s1) and
// to the fused loop (d2, s2), to compare what they make of it.
type twinFeeds struct {
	d1, d2 digester
	s1, s2 simhasher
}

func newTwinFeeds() *twinFeeds {
	base, _ := urlx.Parse("http://a.test/")
	f := new(twinFeeds)
	f.d1.init(base)
	f.d2.init(base)
	f.s1.init()
	f.s2.init()
	return f
}

func (f *twinFeeds) text(tx []byte) {
	f.d1.text(tx)
	f.s1.text(tx)
	feedText(&f.d2, &f.s2, tx)
}

// tag feeds a start tag, which ends the current word.
func (f *twinFeeds) tag(name string) {
	f.d1.tag(false, []byte(name), nil)
	f.d2.tag(false, []byte(name), nil)
	f.s1.endWord()
	f.s2.endWord()
}

// differ ends both feeds and says how they differ ("" when they agree).
func (f *twinFeeds) differ() string {
	if f.d1.sum() != f.d2.sum() {
		return "digest differs between the fused and the separate feeds"
	}
	h1, n1 := f.s1.sum()
	h2, n2 := f.s2.sum()
	if h1 != h2 || n1 != n2 {
		return fmt.Sprintf("SimHash %x/%d vs %x/%d", h1, n1, h2, n2)
	}
	return ""
}

// TestFeedTextMatchesSeparateFeeds checks that the fused text loop gives
// the digest and the SimHash exactly what the two separate feeds give.
func TestFeedTextMatchesSeparateFeeds(t *testing.T) {
	f := newTwinFeeds()
	for _, tx := range []string{
		"Hello World 2026, the   QUICK brown\tfox\n",
		"a\x00b 12ab34 ÉTÉ été",
		"   ", "x", "Ends in a word", " and continues",
	} {
		f.text([]byte(tx))
		f.tag("p")
	}
	if d := f.differ(); d != "" {
		t.Error(d)
	}
}

// TestFeedTextRandom holds the fused loop to the byte-at-a-time feeds on
// random texts: every byte class (white space, digits, control characters,
// NUL, upper case, UTF-8), words longer than 8 and 16 bytes, short pieces
// and long ones, texts longer than a chunk, words going on from one piece
// to the next, and pieces whose array goes on with bytes that must not be
// read as text.
func TestFeedTextRandom(t *testing.T) {
	alphabet := []byte("abcXYZ \t\n\r\f\x00\x01\x0b\x1f09é€!<&;-_")
	rng := rand.New(rand.NewPCG(7, 11))
	for iter := range 3000 {
		f := newTwinFeeds()
		for range 1 + rng.IntN(5) {
			n := rng.IntN(40)
			if rng.IntN(3) == 0 {
				n = rng.IntN(300)
			}
			if iter%50 == 0 {
				n = 1000 + rng.IntN(2000) // several chunks
			}
			text := make([]byte, n, n+rng.IntN(12))
			for i := range text {
				if rng.IntN(3) == 0 {
					text[i] = alphabet[rng.IntN(len(alphabet))]
				} else {
					text[i] = byte('a' + rng.IntN(26)) // long words too
				}
			}
			// Bytes past the piece's end, in its array: word bytes the
			// loop must not take as text.
			for i := len(text); i < cap(text); i++ {
				text[:cap(text)][i] = 'q'
			}
			f.text(text)
			if rng.IntN(2) == 0 { // a tag ends the word; otherwise it goes on in the next piece
				f.tag("b")
			}
		}
		if d := f.differ(); d != "" {
			t.Fatalf("iteration %d: %s", iter, d)
		}
	}
}

// syllableText returns about n bytes of random words of 1 to 4 syllables
// separated by single spaces, like the synthetic web's text: no pattern
// repeats, so a branch predictor cannot learn where words end.
func syllableText(n int) []byte {
	syllables := strings.Fields("ba be bi bo bu ce ci cle co cu da de di do dri du fi fo fro ga ge glu go gu ha he hi ho ju ka ke ki ko la le li lo lu ma me mi mo na ne ni no pa pe pi po pri ra re ri ro ru sa se si so stra ta te ti to tu va ve vi vo ya za ze zo")
	rng := rand.New(rand.NewPCG(1, 2))
	var b []byte
	for len(b) < n {
		for range 1 + rng.IntN(4) {
			b = append(b, syllables[rng.IntN(len(syllables))]...)
		}
		if rng.IntN(12) == 0 {
			b = append(b, '.')
		}
		b = append(b, ' ')
	}
	return b
}

// BenchmarkFeedText measures the fused text loop on ~20 KiB of words of
// the synthetic web's kind (syllable words of 2 to 8 letters, random).
func BenchmarkFeedText(b *testing.B) {
	text := syllableText(20 << 10)
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
