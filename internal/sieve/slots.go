package sieve

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
)

// Slot operations: a grouped store (Options.GroupHash) keeps each slot's
// hashes together, in one bucket's sorted file, so the part of the seen
// set that belongs to a set of slots is read, removed or added in one
// sequential pass over the buckets that hold any of them. They serve the
// hand-off of keys between agents: the old owner extracts the seen-set
// part of the slots it gives up, the new owner inserts it.
//
// Invariants:
//   - A slot operation runs between flushes (it holds flushMu, as a flush
//     does), after flushing what was enqueued before it, so it sees every
//     key enqueued before the call.
//   - DeleteSlots and InsertHashes commit like a flush: new files, the
//     next manifest, the rename; a failure leaves the previous store.
//   - Nothing is delivered to the receiver: inserted hashes are seen, not
//     new.

// slotsInBucket reports whether bucket k (of 2^bktBits) holds a slot that
// in selects.
func slotsInBucket(k, bktBits int, in func(slot uint32) bool) bool {
	per := uint32(1) << (GroupBits - bktBits)
	for s := uint32(k) * per; s < uint32(k+1)*per; s++ {
		if in(s) {
			return true
		}
	}
	return false
}

// ExtractSlots flushes the sieve, then calls emit with every stored hash
// whose slot in selects, in increasing order. It reads the committed store
// without holding up Enqueue or later flushes.
func (s *DRUM) ExtractSlots(in func(slot uint32) bool, emit func(h uint64) error) error {
	if err := s.Flush(); err != nil {
		return err
	}
	s.storeMu.Lock()
	man := s.man.clone()
	var readers []*storeReader
	var err error
	for k, b := range man.buckets {
		if b.gen == 0 || !slotsInBucket(k, s.bktBits, in) {
			continue
		}
		// Opened under the lock: a later commit may delete the file,
		// which an open file survives.
		r, oerr := openStore(filepath.Join(s.dir, bucketFileName(k, b.gen)), k, b, &s.bufs)
		if oerr != nil {
			err = oerr
			break
		}
		readers = append(readers, r)
	}
	s.storeMu.Unlock()
	defer func() {
		for _, r := range readers {
			r.close()
		}
	}()
	if err != nil {
		return fmt.Errorf("sieve: extract: %w", err)
	}
	for _, r := range readers {
		for {
			h, ok := r.next()
			if !ok {
				break
			}
			if in(Slot(h)) {
				if err := emit(h); err != nil {
					return err
				}
			}
		}
		if r.err != nil {
			return fmt.Errorf("sieve: extract: %w", r.err)
		}
	}
	return nil
}

// DeleteSlots flushes the sieve, then removes from the store every hash
// whose slot in selects, and returns how many it removed.
func (s *DRUM) DeleteSlots(in func(slot uint32) bool) (uint64, error) {
	if err := s.Flush(); err != nil {
		return 0, err
	}
	return s.rewrite(func(k int, old bucketMeta, gen uint64) (mergeResult, uint64, error) {
		if old.gen == 0 || !slotsInBucket(k, s.bktBits, in) {
			return mergeResult{}, 0, nil
		}
		return s.filterBucket(k, old, gen, in)
	})
}

// InsertHashes adds hashes (grouped sieve hashes, as ExtractSlots emits
// them) to the store as seen, and returns how many were not there yet.
// Keys enqueued later with one of these hashes are duplicates.
func (s *DRUM) InsertHashes(hs []uint64) (uint64, error) {
	n, _, err := s.insertHashes(hs, false)
	return n, err
}

// InsertHashesKnown is InsertHashes that also returns the hashes of hs
// the store held already (each once).
func (s *DRUM) InsertHashesKnown(hs []uint64) (known []uint64, err error) {
	_, known, err = s.insertHashes(hs, true)
	return known, err
}

func (s *DRUM) insertHashes(hs []uint64, report bool) (uint64, []uint64, error) {
	if len(hs) == 0 {
		return 0, nil, nil
	}
	ps := make([]pair, len(hs))
	for i, h := range hs {
		ps[i] = pair{h: h}
		if report {
			ps[i].i = uint32(i) // the merge marks the first arrival of each new hash
		}
	}
	sortPairs(ps)
	nbits := make([]atomic.Uint64, 1)
	if report {
		nbits = make([]atomic.Uint64, (len(hs)+63)/64)
	}
	shift := uint(64 - s.bktBits)
	n, err := s.rewrite(func(k int, old bucketMeta, gen uint64) (mergeResult, uint64, error) {
		lo, _ := slices.BinarySearchFunc(ps, uint64(k), func(p pair, k uint64) int { return cmpBucket(p.h, shift, k) })
		hi, _ := slices.BinarySearchFunc(ps, uint64(k+1), func(p pair, k uint64) int { return cmpBucket(p.h, shift, k) })
		if s.bktBits == 0 {
			lo, hi = 0, len(ps)
		}
		if lo == hi {
			return mergeResult{}, 0, nil
		}
		r, err := s.mergeBucket(k, old, ps[lo:hi], nbits, gen)
		return r, r.newKeys, err
	})
	if err != nil || !report {
		return n, nil, err
	}
	var known []uint64
	marked := map[uint64]bool{} // a hash given twice is new once at most
	for i, h := range hs {
		if nbits[i/64].Load()&(1<<(i%64)) != 0 {
			marked[h] = true
		}
	}
	for _, h := range hs {
		if !marked[h] {
			known = append(known, h)
			marked[h] = true
		}
	}
	return n, known, nil
}

// cmpBucket compares the bucket of h with k (a shift of 64: one bucket).
func cmpBucket(h uint64, shift uint, k uint64) int {
	b := h >> shift
	switch {
	case b < k:
		return -1
	case b > k:
		return 1
	}
	return 0
}

// rewrite runs f on every bucket under flushMu and commits the buckets it
// changed as the next generation; it returns the sum of f's counts.
func (s *DRUM) rewrite(f func(k int, old bucketMeta, gen uint64) (mergeResult, uint64, error)) (uint64, error) {
	s.mu.Lock()
	err := s.err
	if s.closed {
		err = ErrClosed
	}
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	gen := s.man.gen + 1
	results := make([]mergeResult, len(s.man.buckets))
	var total uint64
	removeNew := func() {
		for k, r := range results {
			if r.changed {
				os.Remove(filepath.Join(s.dir, bucketFileName(k, gen)))
			}
		}
	}
	for k, old := range s.man.buckets {
		r, n, err := f(k, old, gen)
		if err != nil {
			removeNew()
			return 0, err
		}
		results[k] = r
		total += n
	}
	if total == 0 {
		removeNew()
		return 0, nil
	}
	man := s.nextManifest(gen, results)
	if err := prepareManifest(s.dir, man, s.sync); err != nil {
		removeNew()
		return 0, fmt.Errorf("sieve: %w", err)
	}
	if err := s.commit(man, results); err != nil {
		return 0, fmt.Errorf("sieve: %w", err)
	}
	return total, nil
}

// filterBucket writes bucket k's store without the hashes whose slot in
// selects, as generation gen's file, and returns how many it dropped.
func (s *DRUM) filterBucket(k int, old bucketMeta, gen uint64, in func(uint32) bool) (mergeResult, uint64, error) {
	var res mergeResult
	rd, err := openStore(filepath.Join(s.dir, bucketFileName(k, old.gen)), k, old, &s.bufs)
	if err != nil {
		return res, 0, fmt.Errorf("sieve: delete: %w", err)
	}
	defer rd.close()
	w, err := createStore(filepath.Join(s.dir, bucketFileName(k, gen)), k, s.compress, &s.bufs)
	if err != nil {
		return res, 0, fmt.Errorf("sieve: delete: %w", err)
	}
	var dropped uint64
	for {
		h, ok := rd.next()
		if !ok {
			break
		}
		if in(Slot(h)) {
			dropped++
			continue
		}
		if err := w.add(h); err != nil {
			w.abort()
			return res, 0, fmt.Errorf("sieve: delete: %w", err)
		}
	}
	if rd.err != nil || dropped == 0 {
		w.abort()
		if rd.err != nil {
			return res, 0, fmt.Errorf("sieve: delete: %w", rd.err)
		}
		return res, 0, nil
	}
	if old.count == dropped {
		w.abort()
		return mergeResult{meta: bucketMeta{}, changed: true}, dropped, nil
	}
	count, size, err := w.finish(s.sync)
	if err != nil {
		return res, 0, fmt.Errorf("sieve: delete: %w", err)
	}
	return mergeResult{meta: bucketMeta{gen: gen, count: count, size: size}, changed: true}, dropped, nil
}
