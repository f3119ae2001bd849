package cluster

import "sync"

// decodedCache keeps the batches the exchange decoded when they arrived,
// by their position in the inbox, so that the applier hands them to the
// host without reading and decoding them again. It is bounded by the
// records' bytes: a batch that does not fit is not kept, and the applier
// reads it from the inbox as after a restart. Whatever it holds is also
// in the inbox; losing it loses nothing.
type decodedCache struct {
	mu    sync.Mutex
	m     map[int64]decodedEntry // by the frame's first position
	bytes int64
	limit int64
}

type decodedEntry struct {
	b     *Batch
	next  int64 // the position after the frame
	bytes int64
}

// decodedLimit bounds the records the cache holds.
const decodedLimit = 64 << 20

func newDecodedCache(limit int64) *decodedCache {
	return &decodedCache{m: map[int64]decodedEntry{}, limit: limit}
}

// put keeps b, whose frame spans [start, next) of the inbox, if it fits.
// Call it before the frame is durable (Inbox.AppendNotify), so that the
// applier, which waits for that, finds it.
func (c *decodedCache) put(b *Batch, start, next int64) {
	var n int64
	for _, r := range b.Records {
		n += int64(len(r))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bytes+n > c.limit {
		return
	}
	c.m[start] = decodedEntry{b, next, n}
	c.bytes += n
}

// take removes and returns the batch whose frame starts at pos.
func (c *decodedCache) take(pos int64) (*Batch, int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[pos]
	if ok {
		delete(c.m, pos)
		c.bytes -= e.bytes
	}
	return e.b, e.next, ok
}

// dropBefore drops the batches whose frames start before pos (applied
// from the inbox instead).
func (c *decodedCache) dropBefore(pos int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, x := range c.m {
		if p < pos {
			delete(c.m, p)
			c.bytes -= x.bytes
		}
	}
}

// has reports whether the batch at pos is kept.
func (c *decodedCache) has(pos int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.m[pos]
	return ok
}
