package parse

import (
	"math/bits"
)

// ShingleWords is the number of consecutive words of one SimHash feature.
const ShingleWords = 2

// simhasher computes a 64-bit SimHash (Charikar's fingerprint, as used for
// near-duplicate web pages by Manku, Jain and Das Sarma) over the shingles
// of ShingleWords consecutive words of the page text, fed by the same
// tokenizer pass as the digest. Words are what the digest's normalisation
// leaves between white space, digits and tags (text of script and style is
// not seen), with ASCII letters lower-cased. Each shingle is hashed with
// FNV-1a (per word, finished by SplitMix64's mixer) and votes +1 or -1 on each of the 64 bits; the fingerprint has a
// bit set where the votes are positive. Pages differing in a few words
// differ in few shingles, hence in few bits.
type simhasher struct {
	// Votes are counted without a branch per bit: lanes[k] holds, in byte
	// j, how many shingles since the last spill had bit 8j+k set (at most
	// 255, so spill moves them to ones before a byte overflows).
	lanes    [8]uint64
	pending  int                  // shingles counted in lanes
	ones     [64]int32            // per bit: shingles with the bit set, spilled
	votes    [64]int32            // per bit: +1 per shingle with it set, -1 without (set by sum)
	window   [ShingleWords]uint64 // hashes of the last words
	words    int                  // words seen
	shingles int                  // features voted
	wh       uint64               // FNV-1a of the current word
	inWord   bool
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func (s *simhasher) init() {
	*s = simhasher{wh: fnvOffset}
}

// text feeds the bytes of a text token (the reference for feedText, see
// digester.text).
func (s *simhasher) text(t []byte) {
	for _, c := range t {
		if isSpace(c) || c >= '0' && c <= '9' {
			s.endWord()
			continue
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		s.wh = (s.wh ^ uint64(c)) * fnvPrime
		s.inWord = true
	}
}

// endWord ends the current word, if any (white space, a digit or a tag).
func (s *simhasher) endWord() {
	if !s.inWord {
		return
	}
	h := mix64(s.wh)
	s.wh, s.inWord = fnvOffset, false
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
	for k := range s.lanes {
		s.lanes[k] += (h >> uint(k)) & 0x0101010101010101
	}
	s.shingles++
	if s.pending++; s.pending == 255 {
		s.spill()
	}
}

// spill adds the lane counters into ones and clears them.
func (s *simhasher) spill() {
	for k := range s.lanes {
		l := s.lanes[k]
		for j := 0; j < 8; j++ {
			s.ones[8*j+k] += int32(l >> (8 * uint(j)) & 0xff)
		}
		s.lanes[k] = 0
	}
	s.pending = 0
}

// sum returns the fingerprint and the number of shingles it was made of. A
// text of fewer than ShingleWords words (but at least one) is one shingle.
func (s *simhasher) sum() (uint64, int) {
	s.endWord()
	if s.words > 0 && s.words < ShingleWords {
		s.vote()
	}
	s.spill()
	var f uint64
	for i, n := range s.ones {
		s.votes[i] = 2*n - int32(s.shingles)
		if s.votes[i] > 0 {
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
