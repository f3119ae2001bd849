// Package sieve decides, once and for all, which URLs are new: it is Petrel's
// implementation of BUbiNG's AbstractSieve contract, a DRUM / Mercator sieve on
// disk (DRUM), an in-memory equivalent (Memory), and the URL cache that sits in
// front of it (URLCache).
//
// # Guarantees
//
// Keys are byte strings (URLs) identified by their 64-bit Hash. A Sieve
// guarantees that every enqueued key is eventually dequeued, that only
// enqueued keys are dequeued, and that every key is dequeued once, across
// flushes and, for DRUM, across a clean Close and reopen of the same
// directory. Dequeuing means handing the key to the NewFlowReceiver inside a
// flow (PrepareToAppend, Append..., FinishedAppending); within a flow, keys
// come in the order in which they were first enqueued. Two distinct keys with
// the same hash count as one (see Hash for the odds).
//
// # Algorithm
//
// Enqueue hashes the key, appends (hash, arrival index) to a RAM buffer and
// the key itself, length-prefixed, to the buffer's auxiliary file, in arrival
// order. When the buffer holds Options.BufferKeys keys (or on Flush), it is
// handed to the flush goroutine and Enqueue continues into the second buffer;
// Enqueue blocks only when both buffers are full. A flush sorts the buffer by
// hash (in-place MSD radix sort), merges each hash-range bucket of it with that
// bucket's sorted store file into a new file, marking in a bitmap the arrival
// index of the first occurrence of every hash not already stored, writes the
// next manifest, reads the auxiliary file in arrival order handing the marked
// keys to the receiver, and finally commits by renaming the manifest. See
// format.go for the on-disk format. With Options.Compressed the store files
// hold Golomb-Rice codes of the gaps between sorted hashes (about 5 bytes per
// key at 10⁸ keys instead of 8).
//
// # Grouped hashes and slots
//
// With Options.GroupHash (as Petrel's frontier opens it) a key's hash is
// KeyHash: the top GroupBits bits come from its politeness-key group's
// hash (the key's slot), the rest from the key. The store, sorted by hash
// and split into buckets by its top bits, then holds each slot's entries
// in one run of one bucket file, and ExtractSlots, DeleteSlots and
// InsertHashes (slots.go) read, remove or add the seen-set part of a set
// of slots in one sequential pass: the hand-off of keys between the agents
// of a crawl. The odds of a collision are those of 64-bit hashes over the
// whole crawl; within one group of n keys they are n²/2⁴⁵ (0.03 pairs for
// a host of 10⁶ URLs).
//
// # Receiver, goroutines and back-pressure
//
// DRUM calls the receiver from its own flush goroutine, never from Enqueue's
// or Flush's caller; Flush waits until the flow has been delivered and
// committed. Memory calls it from the goroutine that called Flush, Close or
// the Enqueue that filled its buffer. The receiver may block: that stalls the
// flush, then, once the second buffer fills, every Enqueue; that is the
// intended back-pressure from a full ready queue, and it means the receiver
// must never wait for an Enqueue or call into the sieve itself.
//
// # Faults and recovery
//
// A write error during a flush (full disk), a receiver error, or a corrupt
// store file met while merging fails the flush: the new files are removed,
// the manifest is not replaced, so the committed store is exactly the previous
// one, and the sieve becomes unusable (every later call returns the error) so
// the frontier stops the crawl. The keys of the failed batch, and any keys
// enqueued after it, remain in their auxiliary files; the next Open enqueues
// them again and flushes them before returning. Open reads and verifies every
// store file (header, per-block CRC-32C, counts, sizes, ordering): a truncated
// or corrupted store is an error wrapping ErrCorrupt, never a silent loss of
// the seen set that would re-emit old URLs.
//
// Exactly-once holds across clean closes and failed flushes. After a crash
// (power loss, kill -9) keys enqueued but not yet written out of the auxiliary
// file buffer are lost, and a flow whose delivery finished just before the
// manifest rename is delivered again: at-least-once in that narrow window.
//
// # Checkpointing
//
// Store files are immutable once written and are only ever replaced by a new
// manifest naming new files; right after a Flush, the file set named by the
// manifest is a consistent snapshot of everything dequeued so far.
// Checkpoint flushes and then hard-links those files (copying across file
// systems) with a copy of the manifest into another directory, which Open
// accepts as a sieve with the same state. The agent's checkpoint
// stops enqueueing, checkpoints the sieve and saves its ready queue.
//
// # Memory
//
// DRUM holds two buffers of 16 bytes per key, a bitmap of one bit per key and
// the I/O buffers of the store files a flush merges (256 KiB each for
// reading and writing, and a block of hashes, per bucket; kept between
// flushes, so that a small flush allocates next to nothing): about 32.5
// bytes per buffered key (136 MiB with the default 2²² keys), independent
// of the number of stored keys. Memory and
// the map baseline grow with the number of distinct keys.
//
// # URL cache
//
// URLCache is BUbiNG's urlCache: a fixed-size set-associative table of
// recent hashes, consulted by the frontier before the sieve so that the many
// repeats of navigation links never reach it. It allocates nothing per entry;
// the frontier counts its lookups and hits.
//
// # Benchmark
//
// RunBench (bench.go) measures the sieve against a Go map and, in a build
// with the petrelbench tag only (bench_pebble.go; bench_nopebble.go
// without it), against a seen-set on Pebble: petrel itself does not link
// an LSM tree and cgo for a benchmark.
package sieve
