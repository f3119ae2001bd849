package sieve

import "sync/atomic"

// urlCacheWays is the number of slots per set of a URLCache.
const urlCacheWays = 4

// URLCache is BUbiNG's urlCache: a fixed-size, approximate cache of
// recently enqueued URL hashes, kept in front of the sieve so that most
// duplicates (site navigation links) never reach it. It is a set-associative
// table of 64-bit hashes, four per set, with first-in-first-out replacement
// within a set; it allocates nothing after NewURLCache. It may forget a hash
// (a false "not seen", harmless: the sieve still deduplicates) but reports a
// hash as seen only if that same 64-bit hash was added.
//
// It keeps no counters of its own: the frontier counts lookups and hits
// in the crawl's statistics, and two more atomic additions per link,
// on counters every parser shares, cost more than the table lookup.
type URLCache struct {
	slots []atomic.Uint64
	mask  uint64 // sets-1
}

// NewURLCache returns a cache using about bytes bytes of memory (8 per
// entry; the number of sets is rounded down to a power of two, at least one).
func NewURLCache(bytes int) *URLCache {
	sets := 1
	for sets*2*urlCacheWays*8 <= bytes {
		sets *= 2
	}
	return &URLCache{slots: make([]atomic.Uint64, sets*urlCacheWays), mask: uint64(sets - 1)}
}

// Seen reports whether hash was (probably) added recently; if not, it adds
// it. It is safe for concurrent use; concurrent Seen calls on the same set
// may each miss, or lose an insertion, which only costs a sieve lookup.
func (c *URLCache) Seen(hash uint64) bool {
	hash, first := c.locate(hash)
	set := c.slots[first:][:urlCacheWays]
	for i := range set {
		if set[i].Load() == hash {
			return true
		}
	}
	for i := urlCacheWays - 1; i > 0; i-- {
		set[i].Store(set[i-1].Load())
	}
	set[0].Store(hash)
	return false
}

// Touch reads the set hash maps to, changing nothing, so that a Seen of
// hash soon after finds the set in the processor's cache. Touching the sets
// of many hashes one after the other lets their reads from memory overlap.
func (c *URLCache) Touch(hash uint64) {
	_, first := c.locate(hash)
	c.slots[first].Load()
}

// locate returns hash as the table holds it (0 marks an empty slot, so a
// hash of 0 is kept as 1) and the index of the first slot of its set.
func (c *URLCache) locate(hash uint64) (uint64, uint64) {
	if hash == 0 {
		hash = 1
	}
	return hash, (hash & c.mask) * urlCacheWays
}

// Forget removes hash from the cache if it holds it, so that a later Seen
// of it reports it new. Safe for concurrent use, as Seen is (a concurrent
// Seen of the same set may bring it back or lose another insertion).
func (c *URLCache) Forget(hash uint64) {
	hash, first := c.locate(hash)
	set := c.slots[first:][:urlCacheWays]
	for i := range set {
		set[i].CompareAndSwap(hash, 0)
	}
}

// Bytes returns the memory held by the cache's table.
func (c *URLCache) Bytes() int { return len(c.slots) * 8 }

// Holds reports whether hash is in the cache now, changing nothing (for
// inspection: Seen would add it).
func (c *URLCache) Holds(hash uint64) bool {
	hash, first := c.locate(hash)
	set := c.slots[first:][:urlCacheWays]
	for i := range set {
		if set[i].Load() == hash {
			return true
		}
	}
	return false
}
