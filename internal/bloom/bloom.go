// Package bloom is a scalable Bloom filter (Almeida et al., "Scalable
// Bloom Filters", 2007) of digests: the payload and text digest filters of
// a crawl, which cost little while the crawl is small and keep their
// false-positive rate as it grows.
//
// # Stages
//
// A Filter is a list of stages, each a plain Bloom filter. Stage i holds up
// to Capacity·2^i keys at a false-positive rate of Rate·(1-r)·r^i with
// r = 1/2, so the rate of the whole filter, at most the sum over its
// stages, stays below Rate however many stages there are. A key is added
// to the last stage; when that stage is full the next, twice as large, is
// opened. Test asks every stage. Memory grows with the keys added: about
// 1.44·log2(1/p) bits a key at stage rate p (5.4 bytes at 10^-9, one bit
// more per key for each later stage).
//
// Keys must be uniformly distributed bytes (SHA-1 or 128-bit digests): the
// two base hashes of double hashing are read from the key's first 16
// bytes, mixed, not computed by a hash function. A key shorter than 16
// bytes is zero-padded.
//
// # Format
//
// WriteTo writes, all integers little endian:
//
//	"PBLOOM01"          magic and version, 8 bytes
//	rate                float64 bits, the compound false-positive budget
//	capacity            uint64, keys of the first stage
//	stages              uint32
//	then for each stage:
//	  keys              uint64, keys added to it
//	  hashes            uint32, k
//	  words             uint64, length of the bit array in 64-bit words
//	  bits              words × uint64
//
// ReadFrom refuses another magic with ErrFormat (callers drop such a file
// and start empty) and checks that every field is in range. The golden
// test pins the format.
package bloom

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
)

// Magic starts a serialised Filter.
const Magic = "PBLOOM01"

// ErrFormat is returned (wrapped) by ReadFrom for data that is not a
// Filter of this format.
var ErrFormat = errors.New("bloom: not a scalable Bloom filter of format PBLOOM01")

// tightening is r, the ratio of the false-positive rates of two stages.
const tightening = 0.5

// maxStages bounds the stages a Filter grows to (capacities double: 2^40
// times the first is beyond any crawl).
const maxStages = 40

// stage is one plain Bloom filter.
type stage struct {
	bits     []uint64
	k        uint32
	keys     uint64
	capacity uint64
}

// Filter is a scalable Bloom filter. It is not safe for concurrent use.
type Filter struct {
	rate     float64
	capacity uint64
	stages   []*stage
}

// New returns a filter whose first stage holds capacity keys (at least 64)
// and whose compound false-positive rate stays at most rate (0 < rate < 1).
func New(capacity uint64, rate float64) *Filter {
	if capacity < 64 {
		capacity = 64
	}
	if !(rate > 0 && rate < 1) {
		rate = 1e-9
	}
	f := &Filter{rate: rate, capacity: capacity}
	f.grow()
	return f
}

// stageRate is the false-positive rate of stage i.
func (f *Filter) stageRate(i int) float64 {
	return f.rate * (1 - tightening) * math.Pow(tightening, float64(i))
}

// grow opens the next stage.
func (f *Filter) grow() {
	i := len(f.stages)
	n := f.capacity << i
	p := f.stageRate(i)
	k := uint32(math.Ceil(math.Log2(1 / p)))
	m := uint64(math.Ceil(float64(n) * float64(k) / math.Ln2))
	f.stages = append(f.stages, &stage{bits: make([]uint64, (m+63)/64), k: k, capacity: n})
}

// hashes returns the two base hashes of key.
func hashes(key []byte) (uint64, uint64) {
	var b [16]byte
	copy(b[:], key)
	h1 := mix(binary.LittleEndian.Uint64(b[:8]))
	h2 := mix(binary.LittleEndian.Uint64(b[8:]) ^ 0x9e3779b97f4a7c15)
	return h1, h2 | 1
}

// mix is splitmix64's finaliser.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

func (s *stage) has(h1, h2 uint64) bool {
	m := uint64(len(s.bits)) * 64
	for i := range uint64(s.k) {
		b := (h1 + i*h2) % m
		if s.bits[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

func (s *stage) add(h1, h2 uint64) {
	m := uint64(len(s.bits)) * 64
	for i := range uint64(s.k) {
		b := (h1 + i*h2) % m
		s.bits[b/64] |= 1 << (b % 64)
	}
	s.keys++
}

// Test reports whether key was (probably) added.
func (f *Filter) Test(key []byte) bool {
	h1, h2 := hashes(key)
	for _, s := range f.stages {
		if s.has(h1, h2) {
			return true
		}
	}
	return false
}

// TestAndAdd reports whether key was (probably) added, and adds it if not.
func (f *Filter) TestAndAdd(key []byte) bool {
	h1, h2 := hashes(key)
	for _, s := range f.stages {
		if s.has(h1, h2) {
			return true
		}
	}
	last := f.stages[len(f.stages)-1]
	if last.keys >= last.capacity && len(f.stages) < maxStages {
		f.grow()
		last = f.stages[len(f.stages)-1]
	}
	last.add(h1, h2)
	return false
}

// Stats describe a filter.
type Stats struct {
	Keys   uint64  // keys added
	Stages int     // stages opened
	Bytes  int64   // memory of the bit arrays
	Rate   float64 // the compound false-positive budget
	// Estimated is the false-positive rate now, from each stage's fill:
	// the sum over stages of (1 - e^(-k·n/m))^k.
	Estimated float64
}

// Stats returns the filter's figures.
func (f *Filter) Stats() Stats {
	st := Stats{Stages: len(f.stages), Rate: f.rate}
	for _, s := range f.stages {
		st.Keys += s.keys
		st.Bytes += int64(len(s.bits)) * 8
		m := float64(len(s.bits) * 64)
		st.Estimated += math.Pow(1-math.Exp(-float64(s.k)*float64(s.keys)/m), float64(s.k))
	}
	return st
}

// WriteTo writes the filter in the format of the package documentation.
func (f *Filter) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	var n int64
	put := func(b []byte) {
		k, _ := bw.Write(b)
		n += int64(k)
	}
	put([]byte(Magic))
	put(binary.LittleEndian.AppendUint64(nil, math.Float64bits(f.rate)))
	put(binary.LittleEndian.AppendUint64(nil, f.capacity))
	put(binary.LittleEndian.AppendUint32(nil, uint32(len(f.stages))))
	buf := make([]byte, 0, 64<<10)
	for _, s := range f.stages {
		put(binary.LittleEndian.AppendUint64(nil, s.keys))
		put(binary.LittleEndian.AppendUint32(nil, s.k))
		put(binary.LittleEndian.AppendUint64(nil, uint64(len(s.bits))))
		for i, word := range s.bits {
			buf = binary.LittleEndian.AppendUint64(buf, word)
			if len(buf) == cap(buf) || i == len(s.bits)-1 {
				put(buf)
				buf = buf[:0]
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("bloom: write: %w", err)
	}
	return n, nil
}

// ReadFrom reads a filter written by WriteTo.
func ReadFrom(r io.Reader) (*Filter, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var head [8 + 8 + 8 + 4]byte
	if _, err := io.ReadFull(br, head[:8]); err != nil || string(head[:8]) != Magic {
		return nil, ErrFormat
	}
	if _, err := io.ReadFull(br, head[8:]); err != nil {
		return nil, fmt.Errorf("bloom: read: %w", err)
	}
	f := &Filter{
		rate:     math.Float64frombits(binary.LittleEndian.Uint64(head[8:])),
		capacity: binary.LittleEndian.Uint64(head[16:]),
	}
	n := binary.LittleEndian.Uint32(head[24:])
	if !(f.rate > 0 && f.rate < 1) || f.capacity < 1 || f.capacity > 1<<40 || n < 1 || n > maxStages {
		return nil, fmt.Errorf("%w: rate %g, capacity %d, %d stages", ErrFormat, f.rate, f.capacity, n)
	}
	for i := range n {
		var sh [8 + 4 + 8]byte
		if _, err := io.ReadFull(br, sh[:]); err != nil {
			return nil, fmt.Errorf("bloom: read stage %d: %w", i, err)
		}
		s := &stage{keys: binary.LittleEndian.Uint64(sh[:]), k: binary.LittleEndian.Uint32(sh[8:]),
			capacity: f.capacity << i}
		words := binary.LittleEndian.Uint64(sh[12:])
		if s.k < 1 || s.k > 64 || words < 1 || words > 1<<34 || bits.Len64(s.capacity) > 60 {
			return nil, fmt.Errorf("%w: stage %d: %d hashes, %d words", ErrFormat, i, s.k, words)
		}
		s.bits = make([]uint64, words)
		buf := make([]byte, 64<<10)
		for j := uint64(0); j < words; {
			chunk := min(words-j, uint64(len(buf)/8))
			if _, err := io.ReadFull(br, buf[:chunk*8]); err != nil {
				return nil, fmt.Errorf("bloom: read stage %d: %w", i, err)
			}
			for w := range chunk {
				s.bits[j+w] = binary.LittleEndian.Uint64(buf[w*8:])
			}
			j += chunk
		}
		f.stages = append(f.stages, s)
	}
	return f, nil
}
