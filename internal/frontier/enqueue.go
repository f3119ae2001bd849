package frontier

// The enqueue path: a URL found by a parser, a redirect or the exchange is
// checked against the URL cache and its key's budget, then handed to the
// sieve with its Meta.

import (
	"errors"
	"fmt"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

// ErrClosed is returned by Enqueue after the sieve failed or was closed.
var ErrClosed = errors.New("frontier: closed")

// Enqueue offers a URL to the crawl: it is refused if the URL cache has seen
// it recently or its key is over budget, and otherwise goes to the sieve
// with its Meta. Safe for concurrent use.
func (f *Frontier) Enqueue(u urlx.URL, m Meta) error {
	// The key (meta, then the URL) is built in a pooled buffer: the sieve
	// copies what it keeps.
	bp, _ := f.keyBufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer f.keyBufs.Put(bp)
	key := u.AppendString(m.Append((*bp)[:0]))
	*bp = key
	var hash uint64
	if f.cfg.Cache != nil && f.cfg.Hash != nil {
		hash = f.cfg.Hash(key[MetaLen:])
	}
	return f.enqueueKey(key, hash)
}

// maxPooledBatch bounds the key bytes of an enqueueBatch kept for reuse.
const maxPooledBatch = 256 << 10

// enqueueBatch holds the keys of an EnqueueAll call: key i is
// keys[ends[i-1]:ends[i]] (ends[-1] being 0), its URL's hash hashes[i].
type enqueueBatch struct {
	keys   []byte
	ends   []int
	hashes []uint64
}

// EnqueueAll offers each URL of us with m, as Enqueue does, in order, and
// returns the first error. The URL cache's sets of all of them are read
// first, together: a page's links hash to sets all over a table much
// larger than the processor's caches, and reads issued together wait for
// memory at the same time, where one Enqueue after another waits for each
// in turn (BENCHMARKS.md has the measurement).
func (f *Frontier) EnqueueAll(us []urlx.URL, m Meta) error {
	if f.cfg.Cache == nil || f.cfg.Hash == nil || len(us) < 2 {
		for _, u := range us {
			if err := f.Enqueue(u, m); err != nil {
				return err
			}
		}
		return nil
	}
	b, _ := f.batches.Get().(*enqueueBatch)
	if b == nil {
		b = new(enqueueBatch)
	}
	defer func() {
		if cap(b.keys) <= maxPooledBatch {
			f.batches.Put(b) // a page of thousands of links does not stay
		}
	}()
	b.keys, b.ends, b.hashes = b.keys[:0], b.ends[:0], b.hashes[:0]
	for _, u := range us {
		start := len(b.keys)
		b.keys = u.AppendString(m.Append(b.keys))
		b.ends = append(b.ends, len(b.keys))
		b.hashes = append(b.hashes, f.cfg.Hash(b.keys[start+MetaLen:]))
	}
	// A loop of reads alone, so that the processor has them all in flight
	// at once.
	for _, h := range b.hashes {
		f.cfg.Cache.Touch(h)
	}
	start := 0
	for i, end := range b.ends {
		if err := f.enqueueKey(b.keys[start:end:end], b.hashes[i]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// enqueueKey is Enqueue after the key (meta, then the URL) is built; hash
// is the URL's hash when the frontier has a URL cache.
func (f *Frontier) enqueueKey(key []byte, hash uint64) error {
	f.stats.Enqueued.Add(1)
	// The URL cache answers most links (those of a site's navigation, seen
	// on every page), so it is asked before the per-key count, whose
	// lookup takes a lock and a map probe.
	if f.cfg.Cache != nil && f.cfg.Hash != nil {
		f.stats.CacheLookups.Add(1)
		if f.cfg.Cache.Seen(hash) {
			f.stats.CacheHits.Add(1)
			return nil
		}
	}
	f.routeMu.RLock()
	if to := f.cfg.Router.OwnerOf(key[MetaLen:]); to != Self {
		f.routeMu.RUnlock()
		if err := f.cfg.Router.Forward(to, key); err != nil {
			return fmt.Errorf("frontier: forward to %q: %w", to, err)
		}
		return nil
	}
	defer f.routeMu.RUnlock()
	return f.admitOwned(key)
}

// admitOwned offers a record this agent owns to the per-key budget and the
// sieve.
func (f *Frontier) admitOwned(key []byte) error {
	sa := schemeAuthorityOf(key[MetaLen:])
	if budget := f.live.Load().MaxURLsPerKey; budget > 0 && f.counts.get(sa) >= budget {
		f.overBudget(key)
		return nil
	}
	if p := f.sieveErr.Load(); p != nil {
		return *p
	}
	if _, err := f.sieve.Enqueue(key); err != nil {
		err = fmt.Errorf("frontier: sieve enqueue: %w", err)
		f.sieveErr.CompareAndSwap(nil, &err)
		f.poke()
		return err
	}
	f.stats.SieveEnqueued.Add(1)
	f.backlog.add(sa)
	f.sieveIn.Add(1)
	return nil
}

// overBudget counts (and tells Dropped of) the record key (Meta, then
// URL), refused because its key has used its budget.
func (f *Frontier) overBudget(key []byte) {
	f.stats.OverBudget.Add(1)
	if f.cfg.Dropped != nil {
		f.cfg.Dropped(string(key[MetaLen:]), decodeMeta(key), DropOverBudget)
	}
}
