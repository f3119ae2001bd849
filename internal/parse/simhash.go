package parse

import (
	"math/bits"
)

// ShingleWords is the number of consecutive words of one SimHash feature
// (the simhasher holds the previous word's hash: changing it means holding
// a window of them).
const ShingleWords = 2

// wordRotate is the rotation of a word's hash before each byte is xored
// in: 7, not 8, so that bytes 8 apart do not cancel in words longer than 8
// bytes (a byte of ASCII text has its top bit clear, so nothing overlaps
// in words of 9 bytes or less).
const wordRotate = 7

// voteBatch is the number of shingle hashes collected before they vote. It
// must stay below 256: a batch is counted in byte lanes (see countVotes).
const voteBatch = 128

// simhasher computes a 64-bit SimHash (Charikar's fingerprint, as used for
// near-duplicate web pages by Manku, Jain and Das Sarma) over the shingles
// of ShingleWords consecutive words of the page text, fed by the same
// tokenizer pass as the digest. Words are what the digest's normalisation
// leaves between white space, digits and tags (text of script and style is
// not seen), with ASCII letters lower-cased. A word's hash packs its bytes
// into a 64-bit word, rotating it by wordRotate bits before each (so a
// word's bytes only fold onto each other 64 bytes apart); a shingle's hash combines its words' hashes and is
// mixed by one 128-bit multiplication (the high and low halves
// of (a^k1)·(b^k2) xored, wyhash's "mum"), then votes +1 or -1 on each of the 64
// bits; the fingerprint has a bit set where the votes are positive. Pages
// differing in a few words differ in few shingles, hence in few bits.
//
// Invariant: batch[:nb] holds the shingles not yet counted in ones;
// shingles counts every shingle, counted or not.
type simhasher struct {
	batch    [voteBatch]uint64 // shingle hashes waiting to vote
	nb       int               // used part of batch
	ones     [64]int32         // per bit: counted shingles with the bit set
	prev     uint64            // hash of the previous word
	words    int               // words seen
	shingles int               // features voted
	wh       uint64            // current word's hash
	inWord   bool              // a word is being read
}

func (s *simhasher) init() {
	s.nb, s.words, s.shingles = 0, 0, 0
	s.wh, s.inWord = 0, false
	s.ones = [64]int32{}
	s.prev = 0
}

// text feeds the bytes of a text token (the reference for feedText, see
// digester.text).
func (s *simhasher) text(t []byte) {
	for _, c := range t {
		l := textByte[c]
		if l == 0 {
			s.endWord()
			continue
		}
		s.addByte(l)
	}
}

// addByte adds the (lower-cased) byte l to the current word.
func (s *simhasher) addByte(l byte) {
	s.wh = bits.RotateLeft64(s.wh, wordRotate) ^ uint64(l)
	s.inWord = true
}

// endWord ends the current word, if any (white space, a digit or a tag).
func (s *simhasher) endWord() {
	if !s.inWord {
		return
	}
	w := s.wh
	s.wh, s.inWord = 0, false
	s.addWord(w)
}

// addWord adds a word hashed w: the shingle it ends votes.
func (s *simhasher) addWord(w uint64) {
	prev := s.prev
	s.prev = w
	s.words++
	if s.words >= ShingleWords {
		s.vote(prev, w)
	}
}

// vote adds the shingle of the words hashed a and b.
func (s *simhasher) vote(a, b uint64) {
	hi, lo := bits.Mul64(a^0x9e3779b97f4a7c15, b^0xc2b2ae3d27d4eb4f)
	s.batch[s.nb] = hi ^ lo
	s.nb++
	s.shingles++
	if s.nb == len(s.batch) {
		s.countVotes()
	}
}

// countVotes counts the batched shingles' bits into ones. The counting
// runs in lanes held in registers, in two stages. Up to 15 shingles are
// counted in nibble lanes: nibble j of lane k counts the shingles with bit
// 4j+k set, so a shingle costs four shift-and-adds. The nibble lanes are
// then added into byte lanes (byte j of lane k counts bit 8j+k; at most
// voteBatch < 256 shingles), and the byte lanes into ones at the end.
func (s *simhasher) countVotes() {
	const (
		nib = 0x1111111111111111 // the low bit of every nibble
		lo4 = 0x0f0f0f0f0f0f0f0f // the low nibble of every byte
	)
	var b0, b1, b2, b3, b4, b5, b6, b7 uint64
	for batch := s.batch[:s.nb]; len(batch) > 0; {
		var n0, n1, n2, n3 uint64
		for _, h := range batch[:min(15, len(batch))] {
			n0 += h & nib
			n1 += h >> 1 & nib
			n2 += h >> 2 & nib
			n3 += h >> 3 & nib
		}
		batch = batch[min(15, len(batch)):]
		// Nibble 2i of lane k counts bit 8i+k, nibble 2i+1 bit 8i+4+k.
		b0 += n0 & lo4
		b4 += n0 >> 4 & lo4
		b1 += n1 & lo4
		b5 += n1 >> 4 & lo4
		b2 += n2 & lo4
		b6 += n2 >> 4 & lo4
		b3 += n3 & lo4
		b7 += n3 >> 4 & lo4
	}
	s.nb = 0
	for k, l := range [8]uint64{b0, b1, b2, b3, b4, b5, b6, b7} {
		for j := 0; j < 8; j++ {
			s.ones[8*j+k] += int32(l >> (8 * uint(j)) & 0xff)
		}
	}
}

// sum returns the fingerprint and the number of shingles it was made of. A
// text of fewer than ShingleWords words (but at least one) is one shingle.
func (s *simhasher) sum() (uint64, int) {
	s.endWord()
	if s.words > 0 && s.words < ShingleWords {
		s.vote(0, s.prev)
	}
	s.countVotes()
	var f uint64
	for i, n := range s.ones {
		if 2*n > int32(s.shingles) {
			f |= 1 << uint(i)
		}
	}
	return f, s.shingles
}

// Hamming returns the number of bits in which two SimHash fingerprints
// differ.
func Hamming(a, b uint64) int { return bits.OnesCount64(a ^ b) }
