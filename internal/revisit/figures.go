package revisit

import (
	"encoding/binary"
	"math"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Figures are the schedule's counters, for the progress line, the
// metrics and the API (GET /api/v1/status's "revisits", named by the JSON
// tags).
type Figures struct {
	Scheduled int64 `json:"scheduled"` // URLs in the schedule
	Issued    int64 `json:"issued"`    // issued to the frontier, not yet visited
	// Due counts the URLs not issued that are due now (overdue: waiting
	// for a slot or the budget), DueHour those due within the next hour,
	// each up to FiguresCap.
	Due         int64 `json:"due"`
	DueHour     int64 `json:"due_hour"`
	Revisits    int64 `json:"revisits"`     // revisits done by this process
	NotModified int64 `json:"not_modified"` // of which answered 304
	Unchanged   int64 `json:"unchanged"`    // of which a 200 with the last capture's payload
	Skipped     int64 `json:"skipped"`      // duplicate revisit tasks for a due time done, not fetched
	// BytesSaved is the bytes the 304s of this process spared: for each,
	// the size on the wire of the URL's last full capture less the 304's.
	BytesSaved int64 `json:"bytes_saved"`
	// Freshness is the schedule's estimated time-averaged freshness: the
	// mean over its URLs of the expected freshness of a page changing at
	// its estimated rate, visited at its current interval (0 when empty).
	Freshness float64 `json:"freshness"`
	// Hints are the sitemap hints held for URLs not yet visited;
	// HintsDropped those not kept (MaxHints held); HintedDue the URLs a
	// sitemap's lastmod made due (the last two counted by this process).
	Hints        int64 `json:"hints"`
	HintsDropped int64 `json:"hints_dropped"`
	HintedDue    int64 `json:"hinted_due"`
	// Budget is the revisits a second this schedule spends at most and
	// plans for: --revisit-budget times its share (SetShare); 0: no cap.
	Budget float64 `json:"budget"`
}

// FiguresCap bounds the due URLs Figures counts (a scan of the index).
const FiguresCap = 100000

// Figures returns the schedule's counters.
func (s *Schedule) Figures() Figures {
	f := Figures{Scheduled: s.scheduled.Load(), Issued: s.issued.Load(), Revisits: s.visits.Load(),
		NotModified: s.notMod.Load(), Unchanged: s.unchanged.Load(), Skipped: s.skipped.Load(), BytesSaved: s.savedBytes.Load(),
		Hints: s.hints.Load(), HintsDropped: s.hintsDropped.Load(), HintedDue: s.hintedDue.Load(),
		Budget: s.pol.rates.Budget()}
	if f.Scheduled > 0 {
		f.Freshness = min(max(s.fresh.get()/float64(f.Scheduled), 0), 1)
	}
	now := s.now().UnixNano()
	hour := now + int64(time.Hour)
	_ = s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketDue).Cursor()
		for k, _ := c.First(); k != nil && f.DueHour < FiguresCap; k, _ = c.Next() {
			due := int64(binary.BigEndian.Uint64(k))
			if due > hour {
				break
			}
			if due <= now {
				f.Due++
			}
			f.DueHour++
		}
		return nil
	})
	return f
}

// freshness is the expected time-averaged freshness of a page whose
// changes come at rate lambda (per second, Poisson) visited every
// interval ns: (1 − e^(−λI))/(λI), the share of the time its last
// capture is the live version (Cho and Garcia-Molina). 1 for λI → 0.
func freshness(lambda float64, interval int64) float64 {
	x := lambda * float64(interval) / 1e9
	if x < 1e-9 {
		return 1
	}
	return -math.Expm1(-x) / x
}

// freshSum is a sum of the scheduled URLs' freshness, moved as each URL's
// rate or interval changes. Safe for concurrent use; the zero value is 0.
type freshSum struct {
	mu  sync.Mutex
	sum float64
}

func (f *freshSum) add(d float64) { f.mu.Lock(); f.sum += d; f.mu.Unlock() }
func (f *freshSum) set(v float64) { f.mu.Lock(); f.sum = v; f.mu.Unlock() }
func (f *freshSum) get() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sum
}
