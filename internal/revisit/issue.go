package revisit

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/petrel-crawler/petrel/internal/frontier"
)

// SetShare sets the part of Settings.Budget this schedule spends and
// plans for: in a crawl of several agents, this agent's share of the
// keys, so that the crawl's agents together spend the budget once. A
// schedule starts with the whole budget (share 1). A share below
// minShare counts as minShare, so that a budget never becomes none.
func (s *Schedule) SetShare(share float64) {
	s.pol.rates.SetBudget(s.cfg.Settings.Budget * min(max(share, minShare), 1))
	s.poke()
}

// minShare is the least share of the budget a schedule spends.
const minShare = 1.0 / 1024

// issueBatch bounds the URLs issued in one transaction.
const issueBatch = 256

// Run issues the due URLs to the frontier until ctx is done: in due
// order, at most MaxIssued outstanding, and, with a budget, at most the
// budget in force a second (Budget times the share, SetShare; a burst of
// one second's worth). It waits on a timer
// for the next due time, or for a visit that frees a slot.
func (s *Schedule) Run(ctx context.Context) error {
	if s.cfg.Reissue {
		if err := s.reissue(); err != nil {
			return err
		}
	}
	tokens, last := max(s.pol.rates.Budget(), 1), s.now()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now, budget := s.now(), s.pol.rates.Budget()
		if d, held := s.laterDue(now); held && d <= 0 {
			if err := s.flushLater(); err != nil {
				return err
			}
		}
		if budget > 0 {
			tokens = min(tokens+now.Sub(last).Seconds()*budget, max(budget, 1))
		}
		last = now
		room := s.cfg.MaxIssued - int(s.issued.Load())
		if budget > 0 {
			room = min(room, int(tokens))
		}
		var next time.Time
		if room > 0 {
			n, nx, err := s.issueDue(now, min(room, issueBatch))
			if err != nil {
				return err
			}
			tokens -= float64(n)
			if n == min(room, issueBatch) {
				continue // more may be due
			}
			next = nx
		}
		wait := time.Hour
		switch {
		case room <= 0 && budget > 0 && int(s.issued.Load()) < s.cfg.MaxIssued:
			wait = time.Duration((1 - tokens) / budget * 1e9) // the budget's next token
		case room <= 0:
			// MaxIssued outstanding: a visit wakes us.
		case !next.IsZero():
			wait = max(next.Sub(now), time.Millisecond)
		}
		if d, held := s.laterDue(now); held {
			wait = min(wait, max(d, time.Millisecond))
		}
		s.wakeAt.Store(now.Add(wait).UnixNano())
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-s.wake:
		case <-timer.C:
		}
	}
}

// issueDue issues up to n URLs due at now, and returns how many, and the
// due time of the next one not issued (zero: none).
func (s *Schedule) issueDue(now time.Time, n int) (int, time.Time, error) {
	var recs [][]byte
	var next time.Time
	err := s.db.Update(func(tx *bolt.Tx) error {
		recs, next = recs[:0], time.Time{}
		ub, ib, mb := tx.Bucket(bucketURLs), tx.Bucket(bucketIssued), tx.Bucket(bucketMeta)
		seq := uint64(0)
		if b := mb.Get([]byte("seq")); len(b) == 8 {
			seq = binary.BigEndian.Uint64(b)
		}
		c := tx.Bucket(bucketDue).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.First() {
			due := int64(binary.BigEndian.Uint64(k))
			if due > now.UnixNano() || len(recs) == n {
				next = time.Unix(0, due)
				break
			}
			url := string(k[8:])
			if err := c.Delete(); err != nil {
				return err
			}
			b := ub.Get([]byte(url))
			if b == nil {
				continue // an index entry without its URL: dropped
			}
			st, err := decodeState(b)
			if err != nil {
				return err
			}
			seq++
			st.Issued, st.Seq = true, seq
			if err := ub.Put([]byte(url), appendState(nil, &st)); err != nil {
				return err
			}
			if err := ib.Put([]byte(url), issuedValue(seq, 0)); err != nil {
				return err
			}
			recs = append(recs, record(&st, url))
		}
		return mb.Put([]byte("seq"), binary.BigEndian.AppendUint64(nil, seq))
	})
	if err != nil {
		return 0, next, fmt.Errorf("revisit: issue: %w", err)
	}
	s.issued.Add(int64(len(recs)))
	for _, r := range recs {
		if err := s.cfg.Issue(r); err != nil {
			return len(recs), next, fmt.Errorf("revisit: issue: %w", err)
		}
	}
	return len(recs), next, nil
}

// record returns the frontier record of a revisit of url: its Meta with
// the revisit hop added (once), then the URL.
func record(st *State, url string) []byte {
	m, err := frontier.DecodeMeta(st.Meta[:])
	if err != nil {
		m = frontier.Meta{}
	}
	if m.Path.Last() != frontier.HopRevisit {
		m.Path = m.Path.Push(frontier.HopRevisit)
	}
	return frontier.AppendRecord(nil, m, url)
}

// reissue hands the frontier again every URL issued and not visited.
func (s *Schedule) reissue() error {
	var recs [][]byte
	err := s.db.View(func(tx *bolt.Tx) error {
		ub := tx.Bucket(bucketURLs)
		return tx.Bucket(bucketIssued).ForEach(func(k, _ []byte) error {
			if b := ub.Get(k); b != nil {
				st, err := decodeState(b)
				if err != nil {
					return err
				}
				recs = append(recs, record(&st, string(k)))
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("revisit: issue again: %w", err)
	}
	for _, r := range recs {
		if err := s.cfg.Issue(r); err != nil {
			return fmt.Errorf("revisit: issue again: %w", err)
		}
	}
	s.cfg.Logger.Info("revisits issued again after a crash", "urls", len(recs))
	return nil
}
