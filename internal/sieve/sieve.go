package sieve

import (
	"errors"
	"log/slog"
	"time"

	"github.com/cespare/xxhash/v2"
)

// MaxKeyLen is the largest key, in bytes, that a sieve accepts.
// Longer keys make Enqueue fail; URLs that long are not worth crawling.
const MaxKeyLen = 64 << 10

// ErrClosed is returned by operations on a sieve that has been closed.
var ErrClosed = errors.New("sieve: closed")

// ErrCorrupt is wrapped by the errors Open returns when a store file, the
// manifest or an auxiliary file is truncated or fails its checksum.
var ErrCorrupt = errors.New("sieve: corrupt store")

// NewFlowReceiver receives the keys a flush found new, in first-enqueue order.
//
// A flow is PrepareToAppend, zero or more Append calls and FinishedAppending.
// A flow that fails (any of its calls returns an error) is aborted: the store
// is left as it was before the flush, and the receiver must discard what it
// received of that flow. The keys of an aborted flow are delivered again after
// the sieve is reopened on the same directory.
//
// The methods are never called concurrently with each other, and must not call
// back into the sieve that invokes them (Enqueue may block waiting for the very
// flush that is calling the receiver, and Flush would deadlock).
type NewFlowReceiver interface {
	// PrepareToAppend announces a new flow.
	PrepareToAppend() error
	// Append delivers one new key with its hash. The key is only valid
	// during the call; the receiver must copy it to retain it.
	Append(hash uint64, key []byte) error
	// FinishedAppending ends the flow. Only after it returns nil may the
	// sieve record the flow's keys as seen.
	FinishedAppending() error
	// NoMoreAppend reports that the sieve was closed: no more flows follow.
	NoMoreAppend() error
}

// Sieve is BUbiNG's AbstractSieve contract, specialised to byte-string keys
// without values. A Sieve guarantees that every enqueued key is eventually
// dequeued (handed to the NewFlowReceiver), that only enqueued keys are
// dequeued, and that every key is dequeued once; within one flow, new keys
// come out in the order in which they were first enqueued.
type Sieve interface {
	// Enqueue adds key to the sieve. It is cheap and safe for concurrent use;
	// it copies key. It reports whether the call caused a flush.
	Enqueue(key []byte) (flushed bool, err error)
	// Flush checks and updates everything enqueued so far; it returns after
	// the receiver got the resulting flow (or the flush failed).
	Flush() error
	// Close flushes what is pending, then calls NoMoreAppend on the receiver.
	Close() error
}

// Hash returns the 64-bit hash the sieve uses to identify a key: XXH64 with
// seed 0. The sieve stores hashes, not keys, so two distinct keys with the
// same hash are taken for one: with n distinct keys the expected number of
// colliding pairs is about n²/2⁶⁵, that is 2.7×10⁻⁴ at 10⁸ keys and about 2.7
// at 10¹⁰ keys (a handful of URLs, out of ten billion, wrongly dropped as
// already seen).
func Hash(key []byte) uint64 { return xxhash.Sum64(key) }

// Options configures a DRUM sieve. The zero value is usable.
type Options struct {
	// BufferKeys is the number of keys per RAM buffer before a flush; there
	// are two buffers (one filling, one flushing). Zero means
	// DefaultBufferKeys. Each buffered key costs 16 bytes per buffer.
	BufferKeys int
	// Buckets is the number of hash-range buckets (files) of the sorted
	// store, rounded up to a power of two in [1, 256]. Zero means
	// DefaultBuckets. An existing store keeps the count it was created with.
	Buckets int
	// Compressed makes new store files gap-coded (Golomb-Rice on the gaps
	// between sorted hashes) instead of 8 bytes per hash.
	Compressed bool
	// NoSync skips fsync of store files and the manifest. Faster, but a
	// machine crash may leave a store that Open rejects as corrupt. For
	// tests and benchmarks.
	NoSync bool
	// Logger receives flush and recovery logs; nil means slog.Default().
	Logger *slog.Logger
	// KeyPrefix is the number of leading bytes of every key that travel
	// with it but are not part of its identity: the hash skips them, so of
	// several enqueues of one key with different prefixes the first one's
	// prefix comes out. Petrel's frontier keeps a URL's hop count and
	// redirect count there. Keys shorter than KeyPrefix are refused.
	KeyPrefix int
	// GroupHash, when set, returns the 64-bit hash of a key's group (the
	// key without its prefix is passed; Petrel's frontier passes the
	// xxhash of the URL's politeness-key group). The top GroupBits bits
	// of a key's sieve hash are then those of its group's hash, the rest
	// the key's own (KeyHash), so that the store, sorted by hash, holds
	// every group's entries together: one sequential pass picks out the
	// entries of a set of group slots (ExtractSlots, DeleteSlots). A store
	// records whether it was made with GroupHash; opening it the other way
	// is refused.
	GroupHash func(key []byte) uint64
}

// GroupBits is the number of high bits of a grouped key's hash taken from
// its group's hash: its slot. 2^20 slots: the owner of a slot is the unit
// of ownership in a crawl of several agents, and a group of 10^6 URLs
// shares 44 bits among them (about 0.03 colliding pairs).
const GroupBits = 20

const keyBitsMask = 1<<(64-GroupBits) - 1

// KeyHash returns a key's sieve hash given its group's hash gh: the top
// GroupBits bits of gh, then the low bits of Hash(key).
func KeyHash(gh uint64, key []byte) uint64 { return gh&^keyBitsMask | Hash(key)&keyBitsMask }

// Slot returns the slot of a grouped sieve hash, or of a group's hash:
// its top GroupBits bits.
func Slot(h uint64) uint32 { return uint32(h >> (64 - GroupBits)) }

// hasher computes a key's sieve hash (Options.KeyPrefix, GroupHash).
type hasher struct {
	prefix int
	group  func([]byte) uint64
}

func (h hasher) hash(key []byte) uint64 {
	k := key[h.prefix:]
	if h.group == nil {
		return Hash(k)
	}
	return KeyHash(h.group(k), k)
}

// Defaults for Options.
const (
	DefaultBufferKeys = 1 << 22
	DefaultBuckets    = 16
)

// Stats is a snapshot of a sieve's counters.
type Stats struct {
	Enqueued   uint64        // keys passed to Enqueue (including replayed ones)
	New        uint64        // keys found new and delivered
	Duplicates uint64        // keys flushed and found already seen
	Flushes    uint64        // completed flushes
	LastFlush  time.Duration // duration of the last completed flush
	MaxFlush   time.Duration // longest completed flush
	TotalFlush time.Duration // sum of all completed flush durations
	StoredKeys uint64        // distinct hashes in the on-disk store
	StoreBytes int64         // bytes of the store files (manifest excluded)
	RAMBytes   int64         // bytes of RAM held for buffers and I/O
	Buffered   int           // keys waiting in the filling buffer
}
