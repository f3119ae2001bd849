package parse

import (
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// ShingleWords is the number of consecutive words of one SimHash feature.
const ShingleWords = 2

// simhasher computes a 64-bit SimHash (Charikar's fingerprint, as used for
// near-duplicate web pages by Manku, Jain and Das Sarma) over the shingles
// of ShingleWords consecutive words of the page text, fed by the same
// tokenizer pass as the digest. Words are what the digest's normalisation
// leaves between white space, digits and tags (text of script and style is
// not seen), with ASCII letters lower-cased. Each shingle is hashed with
// xxhash64 and votes +1 or -1 on each of the 64 bits; the fingerprint has a
// bit set where the votes are positive. Pages differing in a few words
// differ in few shingles, hence in few bits.
type simhasher struct {
	votes    [64]int32
	window   [ShingleWords]uint64 // hashes of the last words
	words    int                  // words seen
	shingles int                  // features voted
	word     xxhash.Digest
	inWord   bool
	wbuf     [64]byte
	wlen     int
}

func (s *simhasher) init() {
	*s = simhasher{}
	s.word.Reset()
}

// text feeds the bytes of a text token.
func (s *simhasher) text(t []byte) {
	for _, c := range t {
		if isSpace(c) || c >= '0' && c <= '9' {
			s.endWord()
			continue
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if s.wlen == len(s.wbuf) {
			_, _ = s.word.Write(s.wbuf[:])
			s.wlen = 0
		}
		s.wbuf[s.wlen] = c
		s.wlen++
		s.inWord = true
	}
}

// endWord ends the current word, if any (white space, a digit or a tag).
func (s *simhasher) endWord() {
	if !s.inWord {
		return
	}
	_, _ = s.word.Write(s.wbuf[:s.wlen])
	h := s.word.Sum64()
	s.word.Reset()
	s.wlen, s.inWord = 0, false
	copy(s.window[:], s.window[1:])
	s.window[len(s.window)-1] = h
	s.words++
	if s.words >= ShingleWords {
		s.vote()
	}
}

// vote adds the shingle held by the window.
func (s *simhasher) vote() {
	var h uint64
	for i, w := range s.window {
		h ^= bits.RotateLeft64(w, 17*i) * 0x9e3779b97f4a7c15
	}
	h = mix64(h)
	for i := range s.votes {
		if h&(1<<uint(i)) != 0 {
			s.votes[i]++
		} else {
			s.votes[i]--
		}
	}
	s.shingles++
}

// sum returns the fingerprint and the number of shingles it was made of. A
// text of fewer than ShingleWords words (but at least one) is one shingle.
func (s *simhasher) sum() (uint64, int) {
	s.endWord()
	if s.words > 0 && s.words < ShingleWords {
		s.vote()
	}
	var f uint64
	for i, v := range s.votes {
		if v > 0 {
			f |= 1 << uint(i)
		}
	}
	return f, s.shingles
}

// mix64 is the finaliser of SplitMix64: it spreads every input bit over the
// output.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// Hamming returns the number of bits in which two SimHash fingerprints
// differ.
func Hamming(a, b uint64) int { return bits.OnesCount64(a ^ b) }
