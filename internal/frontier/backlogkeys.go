package frontier

import (
	"hash/maphash"
	"math/bits"
	"sync/atomic"
)

// backlogBits is the size of a backlogKeys set, in bits.
const backlogBits = 1 << 16

// backlogKeys is an approximate set of the politeness keys of the URLs
// admitted to the sieve since the last flush began: one bit per key, at a
// hash of it among backlogBits. Its count is the number of bits set: at
// most the keys added (keys whose hashes collide count once), and at
// least the keys waiting in the sieve (a key added while a flush runs may
// have gone with that flush and still count). The zero value is unusable:
// init gives it its seed. Safe for concurrent use.
type backlogKeys struct {
	seed maphash.Seed
	w    [backlogBits / 64]atomic.Uint64
}

func (b *backlogKeys) init() { b.seed = maphash.MakeSeed() }

// add notes key.
func (b *backlogKeys) add(key []byte) {
	i := maphash.Bytes(b.seed, key) % backlogBits
	if w := &b.w[i/64]; w.Load()&(1<<(i%64)) == 0 {
		w.Or(1 << (i % 64))
	}
}

// count returns the number of bits set.
func (b *backlogKeys) count() int {
	n := 0
	for i := range b.w {
		n += bits.OnesCount64(b.w[i].Load())
	}
	return n
}

// clear empties the set (when a flush begins).
func (b *backlogKeys) clear() {
	for i := range b.w {
		b.w[i].Store(0)
	}
}
