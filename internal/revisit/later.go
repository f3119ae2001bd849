package revisit

import (
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// laterBatch is how many first visits wait for one transaction: the
// Scheduled call that brings the list to it commits them all.
const laterBatch = 512

// laterEvery bounds how long a first visit waits for its transaction when
// the list stays short: Run commits the list at least this often.
const laterEvery = 100 * time.Millisecond

// later holds first visits not yet committed: the crawl's first fetches
// of pages, which no due time depends on, written many to a transaction
// instead of one each. Its length is bounded by laterBatch for each caller
// appending while a commit runs.
type later struct {
	mu     sync.Mutex
	visits []laterVisit
	since  time.Time // when the first of visits was added
}

type laterVisit struct {
	url  string
	meta []byte
	v    Visit
}

// Scheduled records the first fetch of url (Meta meta), not a revisit
// task: as Visited, but committed with others, at the latest within
// laterEvery while Run runs, or at Sync. A crash before then loses the
// entry, as it loses every fetch since the last checkpoint, which the
// crawl makes again after its recovery (Sync runs at each checkpoint).
func (s *Schedule) Scheduled(url string, meta []byte, v Visit) error {
	s.later.mu.Lock()
	s.later.visits = append(s.later.visits, laterVisit{url: url, meta: append([]byte(nil), meta...), v: v})
	full, first := len(s.later.visits) >= laterBatch, len(s.later.visits) == 1
	if first {
		s.later.since = s.now()
	}
	s.later.mu.Unlock()
	if full {
		return s.flushLater()
	}
	if first {
		s.poke() // Run waits at most laterEvery for it
	}
	return nil
}

// flushLater commits the first visits held, in one transaction.
func (s *Schedule) flushLater() error {
	s.later.mu.Lock()
	vs := s.later.visits
	s.later.visits = nil
	s.later.mu.Unlock()
	if len(vs) == 0 {
		return nil
	}
	outs := make([]visitOutcome, len(vs))
	err := s.db.Update(func(tx *bolt.Tx) error {
		for i, lv := range vs {
			o, err := s.apply(tx, lv.url, lv.meta, lv.v)
			if err != nil {
				return fmt.Errorf("%s: %w", lv.url, err)
			}
			outs[i] = o
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("revisit: %w", err)
	}
	for _, o := range outs {
		s.account(o)
	}
	return nil
}

// laterDue returns how long until the first visits held are due for
// their transaction at now (≤ 0: due now), and false when none is held.
func (s *Schedule) laterDue(now time.Time) (time.Duration, bool) {
	s.later.mu.Lock()
	defer s.later.mu.Unlock()
	if len(s.later.visits) == 0 {
		return 0, false
	}
	return s.later.since.Add(laterEvery).Sub(now), true
}
