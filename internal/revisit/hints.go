package revisit

import (
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bucketHints holds the sitemaps' hints for URLs not yet scheduled:
// URL → the changefreq period, ns (8 bytes, big-endian; 0 none).
var bucketHints = []byte("h")

// MaxHints bounds the hints kept for URLs not yet visited; a hint beyond
// it is dropped and counted (Figures.HintsDropped).
const MaxHints = 10_000_000

// Hint is what a sitemap says of a URL: how often it changes
// (<changefreq>, as a period; 0 none) and when it last changed
// (<lastmod>; zero none).
type Hint struct {
	Period  time.Duration
	LastMod time.Time
}

// Hinted is a URL and what a sitemap said of it.
type Hinted struct {
	URL string
	Hint
}

// hintOutcome is what applying one hint did.
type hintOutcome int

const (
	hintIgnored hintOutcome = iota
	hintKept                // held for the URL's first visit
	hintDropped             // not held: MaxHints held
	hintDue                 // the scheduled URL made due now
)

// Hints records what a sitemap said of its URLs, in one transaction. For
// a URL not yet scheduled the period is kept (within MaxHints) for its
// first visit: its first interval and the change rate assumed of it. A
// URL scheduled, not issued, whose lastmod is after its last visit and
// not in the future, is made due now: the sitemap says it changed since.
// Anything else is ignored.
func (s *Schedule) Hints(hs []Hinted) error {
	var kept, dropped, due int64
	now := s.now().UnixNano()
	err := s.db.Update(func(tx *bolt.Tx) error {
		kept, dropped, due = 0, 0, 0
		for _, h := range hs {
			o, err := s.applyHint(tx, h, now, s.hints.Load()+kept)
			if err != nil {
				return fmt.Errorf("revisit: hint for %s: %w", h.URL, err)
			}
			switch o {
			case hintKept:
				kept++
			case hintDropped:
				dropped++
			case hintDue:
				due++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.hints.Add(kept)
	s.hintsDropped.Add(dropped)
	if s.hintedDue.Add(due); due > 0 {
		s.poke()
	}
	return nil
}

// applyHint applies h at time now with held hints already kept.
func (s *Schedule) applyHint(tx *bolt.Tx, h Hinted, now, held int64) (hintOutcome, error) {
	ub := tx.Bucket(bucketURLs)
	old := ub.Get([]byte(h.URL))
	if old == nil {
		return keepHint(tx, h, held)
	}
	st, err := decodeState(old)
	if err != nil {
		return hintIgnored, err
	}
	lm := h.LastMod.UnixNano()
	if h.LastMod.IsZero() || st.Issued || lm <= st.Last || lm > now || st.Due <= now {
		return hintIgnored, nil
	}
	if err := tx.Bucket(bucketDue).Delete(dueKey(st.Due, h.URL)); err != nil {
		return hintIgnored, err
	}
	st.Due = now
	if err := tx.Bucket(bucketDue).Put(dueKey(st.Due, h.URL), nil); err != nil {
		return hintIgnored, err
	}
	return hintDue, ub.Put([]byte(h.URL), appendState(nil, &st))
}

// keepHint stores the period of a URL not yet scheduled, unless it has
// none, one is held already, or MaxHints are held.
func keepHint(tx *bolt.Tx, h Hinted, held int64) (hintOutcome, error) {
	hb := tx.Bucket(bucketHints)
	if h.Period <= 0 || hb.Get([]byte(h.URL)) != nil {
		return hintIgnored, nil
	}
	if held >= MaxHints {
		return hintDropped, nil
	}
	return hintKept, hb.Put([]byte(h.URL), binary.BigEndian.AppendUint64(nil, uint64(h.Period)))
}

// takeHint removes and returns the period kept for url (0 none), in the
// transaction of its first visit.
func takeHint(tx *bolt.Tx, url string) (int64, error) {
	hb := tx.Bucket(bucketHints)
	b := hb.Get([]byte(url))
	if len(b) != 8 {
		return 0, nil
	}
	return int64(binary.BigEndian.Uint64(b)), hb.Delete([]byte(url))
}
