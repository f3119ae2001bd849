package sieve

import (
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"
)

// Contains reports whether the sieve knows key (its Meta prefix included,
// as given to Enqueue): in the committed store, or buffered in RAM since
// the last flush. While a flush is under way its keys are in neither place;
// pending then says the answer "not found" may be wrong. It reads one
// bucket's store file, without blocking Enqueue for that long.
func (s *DRUM) Contains(key []byte) (found, buffered, pending bool, err error) {
	if len(key) < s.keyPrefix {
		return false, false, false, fmt.Errorf("sieve: contains: key shorter than its prefix")
	}
	h := s.hasher.hash(key)
	s.mu.Lock()
	for _, p := range s.active.pairs {
		if p.h == h {
			s.mu.Unlock()
			return true, true, false, nil
		}
	}
	pending = s.handed > s.done
	s.mu.Unlock()
	s.storeMu.Lock()
	man := s.man.clone()
	// The file is opened under the lock: a later commit may delete it,
	// which an open file survives.
	r, err := openBucket(s.dir, man, h)
	s.storeMu.Unlock()
	if err != nil {
		return false, false, pending, err
	}
	found, err = scanBucket(r, h)
	return found, false, pending && !found, err
}

// ContainsDir reports whether the store of a sieve that is not open (a
// stopped crawl's) holds key; opts gives its KeyPrefix and GroupHash (the
// rest is ignored). Keys left in auxiliary files by a crash are not
// searched (aux says there are some).
func ContainsDir(dir string, key []byte, opts Options) (found, aux bool, err error) {
	hs := hasher{opts.KeyPrefix, opts.GroupHash}
	if len(key) < hs.prefix {
		return false, false, fmt.Errorf("sieve: contains: key shorter than its prefix")
	}
	data, err := os.ReadFile(filepath.Join(dir, manifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("sieve: %w", err)
	}
	man, err := decodeManifest(data)
	if err != nil {
		return false, false, fmt.Errorf("sieve: %s: %w", dir, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "aux-*.log")); len(m) > 0 {
		aux = true
	}
	if err := checkGrouped(man, opts.GroupHash != nil); err != nil {
		return false, aux, fmt.Errorf("sieve: %s: %w", dir, err)
	}
	h := hs.hash(key)
	r, err := openBucket(dir, man, h)
	if err != nil {
		return false, aux, err
	}
	found, err = scanBucket(r, h)
	return found, aux, err
}

// openBucket opens the store file of the bucket of h (nil: the bucket is
// empty).
func openBucket(dir string, man manifest, h uint64) (*storeReader, error) {
	nb := len(man.buckets)
	if nb == 0 {
		return nil, nil
	}
	k := 0
	if b := bits.Len(uint(nb - 1)); b > 0 {
		k = int(h >> (64 - b))
	}
	meta := man.buckets[k]
	if meta.gen == 0 {
		return nil, nil
	}
	return openStore(filepath.Join(dir, bucketFileName(k, meta.gen)), k, meta, nil)
}

// scanBucket reads a store file (in increasing order) until h or a larger
// hash.
func scanBucket(r *storeReader, h uint64) (bool, error) {
	if r == nil {
		return false, nil
	}
	defer r.close()
	for {
		v, ok := r.next()
		if !ok {
			return false, r.err
		}
		if v >= h {
			return v == h, nil
		}
	}
}
