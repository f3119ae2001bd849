package revisit

import (
	"encoding/binary"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Figures are the schedule's counters, for the progress line and metrics.
type Figures struct {
	Scheduled int64 // URLs in the schedule
	Issued    int64 // issued to the frontier, not yet visited
	// Due counts the URLs not issued that are due now (overdue: waiting
	// for a slot or the budget), DueHour those due within the next hour,
	// each up to FiguresCap.
	Due, DueHour int64
	Revisits     int64 // revisits done by this process
	NotModified  int64 // of which answered 304
	Unchanged    int64 // of which a 200 with the same payload
	Skipped      int64 // duplicate revisit tasks not fetched
}

// FiguresCap bounds the due URLs Figures counts (a scan of the index).
const FiguresCap = 100000

// Figures returns the schedule's counters.
func (s *Schedule) Figures() Figures {
	f := Figures{Scheduled: s.scheduled.Load(), Issued: s.issued.Load(), Revisits: s.visits.Load(),
		NotModified: s.notMod.Load(), Unchanged: s.unchanged.Load(), Skipped: s.skipped.Load()}
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
