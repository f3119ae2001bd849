package sieve

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

// batch is one RAM buffer: the hashes of its keys in arrival order, while the
// keys themselves go to the batch's auxiliary file.
type batch struct {
	seq     uint64
	pairs   []pair
	auxPath string
	aux     *os.File
	auxW    *bufio.Writer
}

// closeAux flushes and closes the auxiliary file, if open.
func (b *batch) closeAux() error {
	if b.aux == nil {
		return nil
	}
	err := b.auxW.Flush()
	if cerr := b.aux.Close(); err == nil {
		err = cerr
	}
	b.aux = nil
	b.auxW.Reset(nil)
	if err != nil {
		return fmt.Errorf("sieve: write aux file: %w", err)
	}
	return nil
}

// testHooks inject faults in tests; nil functions are skipped.
type testHooks struct {
	// midMerge is called by a bucket merge after writing about half of its
	// output; an error aborts the merge as a write error would.
	midMerge func(bucket int) error
	// beforeManifest is called just before the next manifest is written.
	beforeManifest func() error
}

// DRUM is Petrel's disk-based sieve: a DRUM / Mercator sieve with a sorted
// on-disk store of hashes split into hash-range buckets. It implements Sieve.
// Create one with Open.
type DRUM struct {
	keyPrefix int // leading key bytes not hashed (Options.KeyPrefix)
	hasher    hasher
	dir       string
	recv      NewFlowReceiver
	log       *slog.Logger
	bufKeys   int
	bktBits   int
	compress  bool
	sync      bool
	hooks     testHooks

	mu      sync.Mutex
	cond    sync.Cond
	active  *batch
	spare   *batch // nil while the flusher holds it
	nextSeq uint64
	handed  uint64 // seq of the last batch handed to the flusher
	done    uint64 // seq of the last batch the flusher finished
	err     error  // sticky: the first flush or aux error
	closed  bool
	st      Stats
	work    chan *batch
	wg      sync.WaitGroup

	flushMu sync.Mutex // held by a flush and by the slot operations (slots.go)
	storeMu sync.Mutex // guards man against Checkpoint while committing
	man     manifest

	bufs ioBufs // store files' buffers, for the next flush

	// owned by the flusher goroutine
	newBits []atomic.Uint64
	keyBuf  []byte
}

var _ Sieve = (*DRUM)(nil)

// Open opens (creating it if needed) the sieve stored in dir and starts its
// flush goroutine. Every store file named by the manifest is read and
// verified, so a truncated or corrupted store is reported here, wrapping
// ErrCorrupt. Keys left in auxiliary files by a sieve that was not closed
// cleanly (or whose last flush failed) are enqueued again and flushed before
// Open returns, so recv may receive a flow during Open.
func Open(dir string, recv NewFlowReceiver, opts Options) (*DRUM, error) {
	return open(dir, recv, opts, testHooks{})
}

func open(dir string, recv NewFlowReceiver, opts Options, hooks testHooks) (*DRUM, error) {
	if recv == nil {
		return nil, errors.New("sieve: open: nil receiver")
	}
	s := &DRUM{keyPrefix: opts.KeyPrefix, hasher: hasher{opts.KeyPrefix, opts.GroupHash}, dir: dir, recv: recv, log: opts.Logger, bufKeys: opts.BufferKeys,
		compress: opts.Compressed, sync: !opts.NoSync, hooks: hooks}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.bufKeys <= 0 {
		s.bufKeys = DefaultBufferKeys
	}
	s.bufKeys = min(s.bufKeys, 1<<30)
	nb := opts.Buckets
	if nb <= 0 {
		nb = DefaultBuckets
	}
	nb = min(nb, 256)
	s.bktBits = bits.Len(uint(nb - 1))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sieve: open: %w", err)
	}
	auxSeqs, err := s.loadStore(1 << s.bktBits)
	if err != nil {
		return nil, err
	}
	if len(auxSeqs) > 0 {
		s.nextSeq = auxSeqs[len(auxSeqs)-1]
	}
	s.cond.L = &s.mu
	s.newBits = make([]atomic.Uint64, (s.bufKeys+63)/64)
	s.active = s.newBatch()
	s.spare = &batch{pairs: make([]pair, 0, s.bufKeys), auxW: bufio.NewWriterSize(nil, ioBufSize)}
	s.work = make(chan *batch, 1)
	s.wg.Add(1)
	go s.flusher()
	if len(auxSeqs) > 0 {
		if err := s.replay(auxSeqs); err != nil {
			s.mu.Lock()
			if s.err == nil {
				s.err = err
			}
			s.mu.Unlock()
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

func (s *DRUM) newBatch() *batch {
	s.nextSeq++
	return &batch{seq: s.nextSeq, pairs: make([]pair, 0, s.bufKeys), auxW: bufio.NewWriterSize(nil, ioBufSize)}
}

// loadStore reads and verifies the manifest and store files, removes files
// left by failed or interrupted flushes, and returns the sequence numbers of
// leftover auxiliary files, sorted.
func (s *DRUM) loadStore(nb int) ([]uint64, error) {
	data, err := os.ReadFile(filepath.Join(s.dir, manifestName))
	entries, derr := os.ReadDir(s.dir)
	if derr != nil {
		return nil, fmt.Errorf("sieve: open: %w", derr)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".sv") {
				return nil, fmt.Errorf("sieve: open %s: store files without a MANIFEST: %w", s.dir, ErrCorrupt)
			}
		}
		s.man = manifest{buckets: make([]bucketMeta, nb)}
		if s.hasher.group != nil {
			s.man.flags |= flagGrouped
		}
	case err != nil:
		return nil, fmt.Errorf("sieve: open: %w", err)
	default:
		if s.man, err = decodeManifest(data); err != nil {
			return nil, fmt.Errorf("sieve: open %s: %w", s.dir, err)
		}
		if err := checkGrouped(s.man, s.hasher.group != nil); err != nil {
			return nil, fmt.Errorf("sieve: open %s: %w", s.dir, err)
		}
		s.man.flags &^= flagGrouped
		if s.hasher.group != nil {
			s.man.flags |= flagGrouped
		}
		if len(s.man.buckets) != nb {
			s.log.Info("sieve: keeping the store's bucket count", "buckets", len(s.man.buckets), "asked", nb)
			s.bktBits = bits.Len(uint(len(s.man.buckets) - 1))
		}
	}
	live := make(map[string]bool)
	for k, b := range s.man.buckets {
		if b.gen == 0 {
			continue
		}
		name := bucketFileName(k, b.gen)
		live[name] = true
		if err := verifyStore(filepath.Join(s.dir, name), k, b); err != nil {
			return nil, fmt.Errorf("sieve: open %s: %w", s.dir, err)
		}
	}
	var aux []uint64
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".sv") && !live[name], strings.HasSuffix(name, ".tmp"):
			s.log.Info("sieve: removing leftover file", "file", name)
			os.Remove(filepath.Join(s.dir, name))
		case strings.HasPrefix(name, "aux-") && strings.HasSuffix(name, ".log"):
			seq, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, "aux-"), ".log"), 16, 64)
			if err != nil {
				return nil, fmt.Errorf("sieve: open: bad aux file name %q: %w", name, ErrCorrupt)
			}
			aux = append(aux, seq)
		}
	}
	slices.Sort(aux)
	return aux, nil
}

// replay enqueues again the keys of leftover auxiliary files, flushes them and
// removes the files.
func (s *DRUM) replay(seqs []uint64) error {
	n := 0
	for _, seq := range seqs {
		path := filepath.Join(s.dir, auxFileName(seq))
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("sieve: replay: %w", err)
		}
		err = readAux(bufio.NewReaderSize(f, ioBufSize), -1, func(int) bool { return true }, func(_ int, key []byte) error {
			n++
			_, err := s.Enqueue(key)
			return err
		})
		f.Close()
		if errors.Is(err, io.ErrUnexpectedEOF) {
			s.log.Warn("sieve: aux file ends in a partial record (interrupted write); ignoring the tail", "file", filepath.Base(path))
		} else if err != nil {
			return fmt.Errorf("sieve: replay %s: %w", filepath.Base(path), err)
		}
	}
	if err := s.Flush(); err != nil {
		return err
	}
	for _, seq := range seqs {
		os.Remove(filepath.Join(s.dir, auxFileName(seq)))
	}
	s.log.Info("sieve: replayed keys of an unclean shutdown", "keys", n, "files", len(seqs))
	return nil
}

// readAux reads n records (all, if n < 0) of an auxiliary file, calling fn
// for record i if want(i). It returns io.ErrUnexpectedEOF for a partial
// record, and an error wrapping ErrCorrupt for an impossible length.
func readAux(r *bufio.Reader, n int, want func(int) bool, fn func(int, []byte) error) error {
	var buf []byte
	for i := 0; n < 0 || i < n; i++ {
		l, err := binary.ReadUvarint(r)
		if err == io.EOF {
			if n < 0 {
				return nil
			}
			return fmt.Errorf("sieve: aux file has %d records, want %d: %w", i, n, ErrCorrupt)
		}
		if err != nil {
			return err
		}
		if l > MaxKeyLen {
			return fmt.Errorf("sieve: aux record of %d bytes: %w", l, ErrCorrupt)
		}
		if !want(i) {
			if _, err := r.Discard(int(l)); err != nil {
				return io.ErrUnexpectedEOF
			}
			continue
		}
		if cap(buf) < int(l) {
			buf = make([]byte, l, max(int(l), 512))
		}
		buf = buf[:l]
		if _, err := io.ReadFull(r, buf); err != nil {
			return io.ErrUnexpectedEOF
		}
		if err := fn(i, buf); err != nil {
			return err
		}
	}
	return nil
}

// Enqueue adds key to the sieve; it is safe for concurrent use and copies
// key (to the auxiliary file). It returns flushed true when the call filled
// the buffer and handed it to the flush goroutine. It blocks only when both
// buffers are full, that is when the previous flush (including its receiver)
// has not finished yet. After a failed flush every call returns that error.
func (s *DRUM) Enqueue(key []byte) (flushed bool, err error) {
	if len(key) > MaxKeyLen {
		return false, fmt.Errorf("sieve: enqueue: key of %d bytes exceeds %d", len(key), MaxKeyLen)
	}
	if len(key) < s.keyPrefix {
		return false, fmt.Errorf("sieve: enqueue: key of %d bytes is shorter than its %d-byte prefix", len(key), s.keyPrefix)
	}
	h := s.hasher.hash(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return false, s.err
	}
	if s.closed {
		return false, ErrClosed
	}
	// A full batch is being handed off by another caller, which waits for
	// the flusher with s.mu released: wait for the hand-off rather than
	// overfill the batch.
	for len(s.active.pairs) >= s.bufKeys {
		if err := s.handoffLocked(s.active); err != nil {
			return false, err
		}
		if s.closed {
			return false, ErrClosed
		}
	}
	a := s.active
	if a.aux == nil {
		a.auxPath = filepath.Join(s.dir, auxFileName(a.seq))
		f, err := os.OpenFile(a.auxPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			s.err = fmt.Errorf("sieve: enqueue: create aux file: %w", err)
			return false, s.err
		}
		a.aux = f
		a.auxW.Reset(f)
	}
	// Append length and key in the writer's own buffer when they fit: no copy
	// through a temporary.
	rec := binary.AppendUvarint(a.auxW.AvailableBuffer(), uint64(len(key)))
	rec = append(rec, key...)
	if _, err := a.auxW.Write(rec); err != nil {
		s.err = fmt.Errorf("sieve: enqueue: write aux file: %w", err)
		return false, s.err
	}
	a.pairs = append(a.pairs, pair{h: h, i: uint32(len(a.pairs))})
	s.st.Enqueued++
	if len(a.pairs) < s.bufKeys {
		return false, nil
	}
	return true, s.handoffLocked(a)
}

// handoffLocked hands the active batch b to the flusher, waiting for the
// flusher to finish the previous one; if another goroutine handed b off
// meanwhile, it does nothing. s.mu must be held.
func (s *DRUM) handoffLocked(b *batch) error {
	for s.spare == nil && s.err == nil && s.active == b {
		s.cond.Wait()
	}
	if s.err != nil {
		return s.err
	}
	if s.active != b {
		return nil
	}
	s.active, s.spare = s.spare, nil
	s.nextSeq++
	s.active.seq = s.nextSeq
	s.handed = b.seq
	s.work <- b // never blocks: at most one batch is in flight
	return nil
}

// Flush checks and updates everything enqueued so far. It returns after the
// receiver got the resulting flow (called from the flush goroutine, not from
// the caller of Flush) and the store was committed, or with the flush error.
func (s *DRUM) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return s.flushLocked()
}

func (s *DRUM) flushLocked() error {
	if s.err != nil {
		return s.err
	}
	if len(s.active.pairs) > 0 {
		if err := s.handoffLocked(s.active); err != nil {
			return err
		}
	}
	for s.done < s.handed && s.err == nil {
		s.cond.Wait()
	}
	return s.err
}

// Close flushes what is pending, stops the flush goroutine and calls
// NoMoreAppend on the receiver. After a clean Close, opening the same
// directory continues with every key dequeued so far remembered. If a flush
// failed, Close returns its error and leaves the unflushed keys in auxiliary
// files, which the next Open replays. Close is idempotent.
func (s *DRUM) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	err := s.flushLocked()
	s.closed = true
	if cerr := s.active.closeAux(); err == nil {
		err = cerr
	}
	close(s.work)
	s.mu.Unlock()
	s.wg.Wait()
	if rerr := s.recv.NoMoreAppend(); rerr != nil {
		err = errors.Join(err, fmt.Errorf("sieve: close: receiver: %w", rerr))
	}
	return err
}

// Stats returns a snapshot of the sieve's counters.
func (s *DRUM) Stats() Stats {
	s.mu.Lock()
	st := s.st
	st.Buffered = len(s.active.pairs)
	s.mu.Unlock()
	s.storeMu.Lock()
	st.StoredKeys, st.StoreBytes = s.man.storedKeys()
	s.storeMu.Unlock()
	st.RAMBytes = s.ramBytes()
	return st
}

// ramBytes is the memory the sieve holds: two pair buffers, the new-key
// bitmap, the auxiliary file buffers and one reader and writer buffer per
// merge worker.
func (s *DRUM) ramBytes() int64 {
	workers := int64(min(runtime.GOMAXPROCS(0), 1<<s.bktBits))
	return int64(s.bufKeys)*16*2 + int64(len(s.newBits))*8 + 2*ioBufSize + workers*2*ioBufSize
}

// Checkpoint flushes the sieve and makes dst (which must not exist, or be an
// empty directory) a copy of the committed store: store files are hard-linked
// when dst is on the same file system, copied otherwise. Opening dst yields
// the state of the sieve as of the end of the flush. Keys enqueued
// concurrently with Checkpoint may or may not be included; callers that need
// a consistent cut (the frontier's snapshot) stop enqueueing first.
func (s *DRUM) Checkpoint(dst string) error {
	if err := s.Flush(); err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("sieve: checkpoint: %w", err)
	}
	return s.saveStore(dst)
}

// saveStore hard-links (or copies) the committed store files into dst and
// writes the manifest there.
func (s *DRUM) saveStore(dst string) error {
	s.storeMu.Lock()
	defer s.storeMu.Unlock()
	for k, b := range s.man.buckets {
		if b.gen == 0 {
			continue
		}
		name := bucketFileName(k, b.gen)
		if err := linkOrCopy(filepath.Join(s.dir, name), filepath.Join(dst, name)); err != nil {
			return fmt.Errorf("sieve: checkpoint: %w", err)
		}
	}
	if err := writeManifest(dst, s.man, s.sync); err != nil {
		return fmt.Errorf("sieve: checkpoint: %w", err)
	}
	return nil
}

// CheckpointPending makes dst (which must not exist, or be an empty
// directory) a copy of the sieve without flushing it: the committed store,
// hard-linked as by Checkpoint, and a copy of the auxiliary file of the
// keys enqueued since the last flush began. Opening dst replays those keys
// (see Open), so it yields the state of the sieve as of the call, with the
// pending keys still to be delivered. Its cost follows the keys enqueued
// since the last flush, not the store: no merge runs. It first waits for a
// flush already handed over, so that the saved store holds every flow
// delivered so far, and holds Enqueue for the copy. Keys enqueued
// concurrently with it may or may not be included; callers that need a
// consistent cut stop enqueueing first.
func (s *DRUM) CheckpointPending(dst string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	for s.done < s.handed && s.err == nil {
		s.cond.Wait()
	}
	if s.err != nil {
		return s.err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("sieve: checkpoint: %w", err)
	}
	if a := s.active; a.aux != nil {
		if err := a.auxW.Flush(); err != nil {
			s.err = fmt.Errorf("sieve: checkpoint: write aux file: %w", err)
			return s.err
		}
		if err := copyFile(a.auxPath, filepath.Join(dst, auxFileName(a.seq)), s.sync); err != nil {
			return fmt.Errorf("sieve: checkpoint: %w", err)
		}
	}
	return s.saveStore(dst)
}

// copyFile copies src to a new file dst, fsynced when sync is set.
func copyFile(src, dst string, sync bool) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil && sync {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	return copyFile(src, dst, true)
}

// flusher processes handed-off batches until Close.
func (s *DRUM) flusher() {
	defer s.wg.Done()
	for b := range s.work {
		start := time.Now()
		s.flushMu.Lock()
		newKeys, err := s.process(b)
		s.flushMu.Unlock()
		d := time.Since(start)
		s.mu.Lock()
		if err != nil {
			if s.err == nil {
				s.err = err
			}
			s.log.Error("sieve: flush failed", "keys", len(b.pairs), "err", err)
		} else {
			s.st.Flushes++
			s.st.New += newKeys
			s.st.Duplicates += uint64(len(b.pairs)) - newKeys
			s.st.LastFlush = d
			s.st.MaxFlush = max(s.st.MaxFlush, d)
			s.st.TotalFlush += d
			s.log.Debug("sieve: flushed", "keys", len(b.pairs), "new", newKeys, "took", d)
		}
		b.pairs = b.pairs[:0]
		b.aux = nil
		s.done = b.seq
		s.spare = b
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

type mergeResult struct {
	meta    bucketMeta
	newKeys uint64
	changed bool
}

// process runs one flush: sort, merge every touched bucket into new files,
// deliver the new keys in arrival order, commit the manifest.
func (s *DRUM) process(b *batch) (uint64, error) {
	if err := b.closeAux(); err != nil {
		return 0, err
	}
	n := len(b.pairs)
	if n == 0 {
		return 0, nil
	}
	sortPairs(b.pairs)
	nbits := s.newBits[:(n+63)/64]
	for i := range nbits {
		nbits[i].Store(0)
	}
	nb := 1 << s.bktBits
	shift := uint(64 - s.bktBits)
	gen := s.man.gen + 1
	results := make([]mergeResult, nb)
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	lo := 0
	for k := 0; k < nb; k++ {
		hi := n
		if k+1 < nb {
			hi = lo + sort.Search(n-lo, func(j int) bool { return b.pairs[lo+j].h>>shift > uint64(k) })
		}
		if s.bktBits == 0 {
			hi = n
		}
		if hi > lo {
			ps := b.pairs[lo:hi]
			g.Go(func() error {
				r, err := s.mergeBucket(k, s.man.buckets[k], ps, nbits, gen)
				results[k] = r
				return err
			})
		}
		lo = hi
	}
	err := g.Wait()
	removeNew := func() {
		for k, r := range results {
			if r.changed {
				os.Remove(filepath.Join(s.dir, bucketFileName(k, gen)))
			}
		}
	}
	if err != nil {
		removeNew()
		return 0, err
	}
	var newKeys uint64
	for _, r := range results {
		newKeys += r.newKeys
	}
	man := s.nextManifest(gen, results)
	// Write the next manifest before the receiver sees anything, so that
	// running out of space fails the flush with nothing delivered.
	if s.hooks.beforeManifest != nil {
		if err := s.hooks.beforeManifest(); err != nil {
			removeNew()
			return 0, fmt.Errorf("sieve: flush: %w", err)
		}
	}
	if err := prepareManifest(s.dir, man, s.sync); err != nil {
		removeNew()
		return 0, fmt.Errorf("sieve: flush: %w", err)
	}
	if newKeys > 0 {
		if err := s.deliver(b, nbits); err != nil {
			removeNew()
			return 0, err
		}
	}
	if err := s.commit(man, results); err != nil {
		// The receiver has the flow but the store may not record it: after a
		// crash here the flow is delivered again (at-least-once window).
		return 0, fmt.Errorf("sieve: flush: %w", err)
	}
	if err := os.Remove(b.auxPath); err != nil {
		s.log.Warn("sieve: removing aux file", "err", err)
	}
	return newKeys, nil
}

// nextManifest is the manifest of generation gen: the current one with
// the buckets results changed.
func (s *DRUM) nextManifest(gen uint64, results []mergeResult) manifest {
	man := s.man.clone()
	man.gen = gen
	for k, r := range results {
		if r.changed {
			man.buckets[k] = r.meta
		}
	}
	return man
}

// commit renames the prepared manifest man into place (the commit point),
// makes it the sieve's, and removes the store files it replaced.
func (s *DRUM) commit(man manifest, results []mergeResult) error {
	s.storeMu.Lock()
	old := s.man
	renamed, err := commitManifest(s.dir, s.sync)
	if renamed {
		s.man = man
	}
	s.storeMu.Unlock()
	if err != nil {
		return err
	}
	for k, r := range results {
		if r.changed && old.buckets[k].gen != 0 {
			if err := os.Remove(filepath.Join(s.dir, bucketFileName(k, old.buckets[k].gen))); err != nil {
				s.log.Warn("sieve: removing replaced store file", "err", err)
			}
		}
	}
	return nil
}

// mergeBucket merges the sorted batch slice ps into bucket k's store, writing
// generation gen's file, and marks the arrival index of each new hash's first
// occurrence in nbits.
func (s *DRUM) mergeBucket(k int, old bucketMeta, ps []pair, nbits []atomic.Uint64, gen uint64) (mergeResult, error) {
	var res mergeResult
	var rd *storeReader
	if old.gen != 0 {
		var err error
		if rd, err = openStore(filepath.Join(s.dir, bucketFileName(k, old.gen)), k, old, &s.bufs); err != nil {
			return res, fmt.Errorf("sieve: flush: %w", err)
		}
		defer rd.close()
	}
	w, err := createStore(filepath.Join(s.dir, bucketFileName(k, gen)), k, s.compress, &s.bufs)
	if err != nil {
		return res, fmt.Errorf("sieve: flush: %w", err)
	}
	var cur uint64
	have := false
	if rd != nil {
		cur, have = rd.next()
	}
	half := len(ps) / 2
	for j := 0; j < len(ps); {
		h, first := ps[j].h, ps[j].i
		for j++; j < len(ps) && ps[j].h == h; j++ {
			first = min(first, ps[j].i)
		}
		if s.hooks.midMerge != nil && j > half {
			if err := s.hooks.midMerge(k); err != nil {
				w.abort()
				return res, fmt.Errorf("sieve: flush: write store file: %w", err)
			}
			half = len(ps) + 1
		}
		for have && cur < h {
			if err := w.add(cur); err != nil {
				w.abort()
				return res, fmt.Errorf("sieve: flush: %w", err)
			}
			cur, have = rd.next()
		}
		if have && cur == h {
			continue
		}
		if err := w.add(h); err != nil {
			w.abort()
			return res, fmt.Errorf("sieve: flush: %w", err)
		}
		nbits[first/64].Or(1 << (first % 64))
		res.newKeys++
	}
	for have {
		if err := w.add(cur); err != nil {
			w.abort()
			return res, fmt.Errorf("sieve: flush: %w", err)
		}
		cur, have = rd.next()
	}
	if rd != nil && rd.err != nil {
		w.abort()
		return res, fmt.Errorf("sieve: flush: %w", rd.err)
	}
	if res.newKeys == 0 {
		w.abort() // identical to the old file: keep it
		return res, nil
	}
	count, size, err := w.finish(s.sync)
	if err != nil {
		return res, fmt.Errorf("sieve: flush: %w", err)
	}
	res.meta = bucketMeta{gen: gen, count: count, size: size}
	res.changed = true
	return res, nil
}

// deliver reads the batch's auxiliary file in arrival order and hands the keys
// marked new to the receiver, as one flow.
func (s *DRUM) deliver(b *batch, nbits []atomic.Uint64) error {
	f, err := os.Open(b.auxPath)
	if err != nil {
		return fmt.Errorf("sieve: flush: open aux file: %w", err)
	}
	defer f.Close()
	if err := s.recv.PrepareToAppend(); err != nil {
		return fmt.Errorf("sieve: flush: receiver: %w", err)
	}
	var recvErr error
	err = readAux(bufio.NewReaderSize(f, ioBufSize), len(b.pairs),
		func(i int) bool { return nbits[i/64].Load()&(1<<(i%64)) != 0 },
		func(_ int, key []byte) error {
			if err := s.recv.Append(s.hasher.hash(key), key); err != nil {
				recvErr = err
				return err
			}
			return nil
		})
	if recvErr != nil {
		return fmt.Errorf("sieve: flush: receiver: %w", recvErr)
	}
	if err != nil {
		return fmt.Errorf("sieve: flush: read aux file: %w", err)
	}
	if err := s.recv.FinishedAppending(); err != nil {
		return fmt.Errorf("sieve: flush: receiver: %w", err)
	}
	return nil
}
