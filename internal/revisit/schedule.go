package revisit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Bucket names of the schedule's file.
var (
	bucketURLs   = []byte("u") // URL → State
	bucketDue    = []byte("d") // dueKey(Due, URL) → nothing, for the URLs not issued
	bucketIssued = []byte("i") // URL → issue number (8 bytes), then the claim's time (8 bytes) once claimed (claims.go)
	bucketMeta   = []byte("m") // "seq" → the last issue number; "rates" → the histogram; "fresh" → the freshness sum (float64 bits)
)

// Config configures a Schedule.
type Config struct {
	Dir      string   // its file is Dir/schedule.db
	Settings Settings // the policy and its bounds
	// Issue hands the record of a due URL (its Meta, the revisit hop
	// added, then the URL) to the frontier. Called by Run only.
	Issue func(rec []byte) error
	// Reissue says the last process died: Run issues again the URLs it
	// had issued and not seen visited (the frontier went back to a
	// checkpoint that may not hold them; those it holds too are skipped
	// by Claim).
	Reissue bool
	// WARCDir is where the crawl's WARC files are, whole (repaired after
	// a crash): Open commits from them the visits whose records were
	// stored after their claim and before the death of the last process
	// (recovery.go). "": none is looked for.
	WARCDir string
	// MaxIssued bounds the URLs issued and not yet visited (default 4096).
	MaxIssued int
	Now       func() time.Time // nil: time.Now
	Logger    *slog.Logger
}

// Schedule is the revisit schedule of a crawl: every URL visited, its
// State, ordered by due time, in one bbolt file. Its RAM is bounded: the
// file is mapped, not loaded; the Go heap holds the rate histogram, the
// claims of the fetches in flight (at most MaxIssued) and counters. Its
// methods are safe for concurrent use.
type Schedule struct {
	cfg    Config
	db     *bolt.DB
	pol    *policy
	now    func() time.Time
	wake   chan struct{} // a URL became due earlier, or a slot was freed
	wakeAt atomic.Int64  // when Run wakes by itself (Unix ns)
	mu     sync.Mutex    // guards claims
	claims map[string]struct{}

	closed     atomic.Bool
	issued     atomic.Int64 // URLs issued and not visited
	scheduled  atomic.Int64 // URLs in the schedule
	visits     atomic.Int64 // revisits done (this process)
	notMod     atomic.Int64 // of which 304
	unchanged  atomic.Int64 // of which 200 with the same payload
	skipped    atomic.Int64 // duplicate revisit tasks not fetched
	savedBytes atomic.Int64 // bytes a 304 spared: the last full capture's size less the 304's (this process)
	fresh      freshSum     // the expected freshness of every scheduled URL, summed
	later      later        // first visits waiting for their transaction (later.go)

	hints        atomic.Int64 // sitemap hints held for URLs not yet visited
	hintsDropped atomic.Int64 // hints not kept: MaxHints held (this process)
	hintedDue    atomic.Int64 // URLs made due by a sitemap's lastmod (this process)
}

// Open opens (or creates) the schedule in cfg.Dir. Before it returns, the
// claims the last process left are settled from the WARC files in
// cfg.WARCDir (recovery.go): no fetch may run before.
func Open(cfg Config) (*Schedule, error) {
	pol, err := newPolicy(cfg.Settings)
	if err != nil {
		return nil, err
	}
	if cfg.MaxIssued <= 0 {
		cfg.MaxIssued = 4096
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("revisit: %w", err)
	}
	db, err := bolt.Open(filepath.Join(cfg.Dir, "schedule.db"), 0o644, &bolt.Options{Timeout: time.Second, NoSync: true, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return nil, fmt.Errorf("revisit: open schedule: %w", err)
	}
	db.MaxBatchDelay, db.MaxBatchSize = 2*time.Millisecond, 256
	s := &Schedule{cfg: cfg, db: db, pol: pol, now: cfg.Now, wake: make(chan struct{}, 1), claims: map[string]struct{}{}}
	if err := s.load(); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.recoverClaims(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// load creates the buckets and reads the counts and the histogram.
func (s *Schedule) load() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketURLs, bucketDue, bucketIssued, bucketMeta, bucketHints} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return fmt.Errorf("revisit: %w", err)
			}
		}
		s.scheduled.Store(int64(tx.Bucket(bucketURLs).Stats().KeyN))
		s.issued.Store(int64(tx.Bucket(bucketIssued).Stats().KeyN))
		s.hints.Store(int64(tx.Bucket(bucketHints).Stats().KeyN))
		if b := tx.Bucket(bucketMeta).Get([]byte("rates")); len(b) == 8*rateBuckets {
			r := s.pol.rates
			for i := range r.buckets {
				r.buckets[i] = max(int64(binary.BigEndian.Uint64(b[8*i:])), 0)
				r.n += r.buckets[i]
			}
		}
		if b := tx.Bucket(bucketMeta).Get([]byte("fresh")); len(b) == 8 {
			s.fresh.set(math.Float64frombits(binary.BigEndian.Uint64(b)))
		}
		return nil
	})
}

// Sync saves the rate histogram and makes everything written so far
// durable (an fsync): the agent calls it at each checkpoint. Without it
// the schedule survives the death of the process (its writes are in the
// operating system's hands) but not of the machine.
func (s *Schedule) Sync() error {
	if err := s.flushLater(); err != nil {
		return err
	}
	r := s.pol.rates
	r.mu.Lock()
	b := make([]byte, 0, 8*rateBuckets)
	for _, c := range r.buckets {
		b = binary.BigEndian.AppendUint64(b, uint64(c))
	}
	r.mu.Unlock()
	fresh := binary.BigEndian.AppendUint64(nil, math.Float64bits(s.fresh.get()))
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return errors.Join(tx.Bucket(bucketMeta).Put([]byte("rates"), b), tx.Bucket(bucketMeta).Put([]byte("fresh"), fresh))
	}); err != nil {
		return fmt.Errorf("revisit: sync: %w", err)
	}
	if err := s.db.Sync(); err != nil {
		return fmt.Errorf("revisit: sync: %w", err)
	}
	return nil
}

// Close saves and closes the schedule; later calls do nothing.
func (s *Schedule) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	err := s.Sync()
	return errors.Join(err, s.db.Close())
}

// Lookup returns the State of url, if the schedule has it.
func (s *Schedule) Lookup(url string) (State, bool, error) {
	var st State
	var ok bool
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketURLs).Get([]byte(url))
		if b == nil {
			return nil
		}
		var err error
		st, err = decodeState(b)
		ok = err == nil
		return err
	})
	return st, ok, err
}

// Visit is what a visit of a URL found.
type Visit struct {
	Time         time.Time // when the request started
	Status       int       // the HTTP status (304: not modified)
	Digest       [20]byte  // the payload's SHA-1 (a 200)
	ETag         string    // the response's ETag ("" none)
	LastModified time.Time // the response's Last-Modified (zero: none or unparsable)
	RecordID     [16]byte  // the response record's ID (a full capture, not a revisit record)
	Full         bool      // RecordID names a full capture of this visit
	Bytes        int64     // the response's bytes on the wire
}

// Visited records a visit of url with Meta meta: a first visit schedules
// it; a revisit (it is issued) is done, and scheduled again. It returns
// the next due time. It commits before it returns: a revisit's due time
// is done once it returns.
func (s *Schedule) Visited(url string, meta []byte, v Visit) (time.Time, error) {
	var o visitOutcome
	err := s.db.Batch(func(tx *bolt.Tx) error {
		var err error
		o, err = s.apply(tx, url, meta, v)
		return err
	})
	s.release(url)
	if err != nil {
		return time.Time{}, fmt.Errorf("revisit: %s: %w", url, err)
	}
	s.account(o)
	return unixTime(o.due), nil
}

// visitOutcome is what applying one visit changed, for the counters kept
// beside the file (updated once its transaction committed).
type visitOutcome struct {
	due                          int64
	from, to, freshFrom, freshTo float64
	wasIssued, known, tookHint   bool
}

// apply records the visit v of url (Meta meta) in tx.
func (s *Schedule) apply(tx *bolt.Tx, url string, meta []byte, v Visit) (visitOutcome, error) {
	o := visitOutcome{from: -1, to: -1}
	ub := tx.Bucket(bucketURLs)
	old := ub.Get([]byte(url))
	st := State{}
	o.known = old != nil
	if old != nil {
		var err error
		if st, err = decodeState(old); err != nil {
			return o, err
		}
		o.wasIssued = st.Issued
		o.from = st.Rate(s.pol.priorOf(&st))
		o.freshFrom = freshness(o.from, st.Interval)
	} else {
		copy(st.Meta[:], meta)
		var err error
		if st.Hint, err = takeHint(tx, url); err != nil {
			return o, err
		}
		o.tookHint = st.Hint > 0
	}
	changed := s.observe(&st, v)
	if err := s.reschedule(tx, url, &st, s.pol.next(&st, changed)); err != nil {
		return o, err
	}
	o.to, o.due = st.Rate(s.pol.priorOf(&st)), st.Due
	o.freshTo = freshness(o.to, st.Interval)
	return o, ub.Put([]byte(url), appendState(nil, &st))
}

// account updates the counters, the rate histogram and the freshness sum
// after o's transaction committed, and wakes Run when it should look.
func (s *Schedule) account(o visitOutcome) {
	s.pol.rates.Move(o.from, o.to)
	s.fresh.add(o.freshTo - o.freshFrom)
	if !o.known {
		s.scheduled.Add(1)
	}
	if o.tookHint {
		s.hints.Add(-1)
	}
	if o.wasIssued {
		s.issued.Add(-1)
		s.visits.Add(1)
		s.poke()
	} else if o.due < s.wakeAt.Load() {
		s.poke() // due before Run planned to look again
	}
}

// observe updates st with the visit v, and reports whether it found the
// URL changed (a 200 of another payload, or any other status).
func (s *Schedule) observe(st *State, v Visit) bool {
	now := v.Time.UnixNano()
	first := st.Last == 0
	changed := false
	switch {
	case v.Status == 304:
		s.notMod.Add(1)
		s.savedBytes.Add(max(st.Size-v.Bytes, 0))
	case v.Status == 200 && v.Digest == st.Digest && !first:
		s.unchanged.Add(1)
	default:
		changed = !first
	}
	var lm int64
	if !v.LastModified.IsZero() {
		lm = v.LastModified.UnixNano()
	}
	st.watch(now, lm, changed, v.Status != 304)
	if v.Status == 304 {
		return false // the validators and the capture stay the last full one's
	}
	st.Digest = v.Digest
	st.ETag = ""
	if len(v.ETag) <= MaxETag && validHeader(v.ETag) {
		st.ETag = v.ETag
	}
	st.LastModified = 0
	if !v.LastModified.IsZero() {
		st.LastModified = v.LastModified.Unix()
	}
	if v.Full {
		st.RecordID, st.RecordDate = v.RecordID, now
	}
	st.Size = v.Bytes
	return changed
}

// validHeader reports whether v can be sent as a header value as is.
func validHeader(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// reschedule moves url out of the issued set or the due index into the
// due index at now + interval.
func (s *Schedule) reschedule(tx *bolt.Tx, url string, st *State, interval time.Duration) error {
	if st.Issued {
		if err := tx.Bucket(bucketIssued).Delete([]byte(url)); err != nil {
			return err
		}
	} else if st.Due != 0 {
		if err := tx.Bucket(bucketDue).Delete(dueKey(st.Due, url)); err != nil {
			return err
		}
	}
	st.Issued, st.Interval = false, int64(interval)
	st.Due = max(st.Last, 1) + int64(interval)
	return tx.Bucket(bucketDue).Put(dueKey(st.Due, url), nil)
}

// Failed is called when the revisit of a claimed or issued url got no
// response (a failure, or the frontier dropped it): it is scheduled again
// one interval on, as if unchanged. A URL not issued is left alone.
func (s *Schedule) Failed(url string) error {
	var was bool
	err := s.db.Batch(func(tx *bolt.Tx) error {
		ub := tx.Bucket(bucketURLs)
		old := ub.Get([]byte(url))
		was = false
		if old == nil {
			return nil
		}
		st, err := decodeState(old)
		if err != nil || !st.Issued {
			return err
		}
		was = true
		last := st.Last
		st.Last = s.now().UnixNano()
		err = s.reschedule(tx, url, &st, time.Duration(st.Interval))
		st.Last = last
		if err != nil {
			return err
		}
		return ub.Put([]byte(url), appendState(nil, &st))
	})
	s.release(url)
	if was {
		s.issued.Add(-1)
		s.poke()
	}
	return err
}

// poke wakes Run.
func (s *Schedule) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
