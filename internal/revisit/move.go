package revisit

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Moving URLs between schedules. In a crawl of several agents a URL's
// entry lives in the schedule of the agent that fetches it, the owner of
// its host's address; when the owner changes, the entry goes to the new
// one. The schedule knows nothing of owners: the agent reads an entry
// (Entry, Entries), sends it, and once what it sent is durable removes
// it (Forget) unless it changed meanwhile; the receiver puts it in its
// own schedule (Adopt). An entry sent twice (a crash before its Forget)
// is adopted once: Adopt keeps the entry that has seen more visits.
//
// Exactly once per due time holds across a move: the sender forgets only
// the very entry it sent (the same bytes: not issued since, nor visited),
// and the receiver refuses an entry whose URL it is fetching (claimed) or
// that it has seen visited more often.

// Entry is one URL's entry as another schedule adopts it.
type Entry struct {
	URL   string
	State []byte // its State's encoding (appendState)
	Rec   []byte // the frontier record a revisit of it is (Meta with the revisit hop, then the URL)
}

// Entry returns url's entry (false: url is not scheduled).
func (s *Schedule) Entry(url string) (Entry, bool, error) {
	var e Entry
	var ok bool
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketURLs).Get([]byte(url))
		if b == nil {
			return nil
		}
		st, err := decodeState(b)
		if err != nil {
			return err
		}
		e, ok = Entry{URL: url, State: bytes.Clone(b), Rec: record(&st, url)}, true
		return nil
	})
	if err != nil {
		return Entry{}, false, fmt.Errorf("revisit: %s: %w", url, err)
	}
	return e, ok, nil
}

// Entries returns up to n entries in URL order, from the first URL after
// after ("": from the first). The first fetches held for their
// transaction are committed first.
func (s *Schedule) Entries(after string, n int) ([]Entry, error) {
	if err := s.flushLater(); err != nil {
		return nil, err
	}
	var out []Entry
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketURLs).Cursor()
		k, v := c.First()
		if after != "" {
			if k, v = c.Seek([]byte(after)); k != nil && string(k) == after {
				k, v = c.Next()
			}
		}
		for ; k != nil && len(out) < n; k, v = c.Next() {
			st, err := decodeState(v)
			if err != nil {
				return err
			}
			out = append(out, Entry{URL: string(k), State: bytes.Clone(v), Rec: record(&st, string(k))})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("revisit: entries: %w", err)
	}
	return out, nil
}

// Forget removes the entries sent to another schedule, each only if it
// is still the one sent (the same bytes). It reports how many it removed.
func (s *Schedule) Forget(sent []Entry) (int, error) {
	var gone []State
	err := s.db.Update(func(tx *bolt.Tx) error {
		gone = gone[:0]
		ub := tx.Bucket(bucketURLs)
		for _, e := range sent {
			if b := ub.Get([]byte(e.URL)); b == nil || !bytes.Equal(b, e.State) {
				continue
			}
			st, err := decodeState(e.State)
			if err != nil {
				return err
			}
			if err := unindex(tx, e.URL, &st); err != nil {
				return err
			}
			if err := ub.Delete([]byte(e.URL)); err != nil {
				return err
			}
			gone = append(gone, st)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("revisit: forget moved entries: %w", err)
	}
	for i := range gone {
		st := &gone[i]
		r := st.Rate(s.pol.priorOf(st))
		s.pol.rates.Move(r, -1)
		s.fresh.add(-freshness(r, st.Interval))
		s.scheduled.Add(-1)
		if st.Issued {
			s.issued.Add(-1)
			s.poke()
		}
	}
	return len(gone), nil
}

// Adopt puts an entry another schedule sent in this one, due when it was
// due there, and reports whether it did. It keeps what it holds of the
// URL instead when that has seen more visits, or as many and is not
// issued (the same entry, sent again), or while a fetch holds the URL. An
// issued entry of as many visits that no fetch holds is replaced: it may
// be this very entry on its way out, come back before its Forget; a task
// of it in the frontier is then a duplicate that Claim refuses.
func (s *Schedule) Adopt(url string, enc []byte) (bool, error) {
	in, err := decodeState(enc)
	if err != nil {
		return false, fmt.Errorf("revisit: adopt %s: %w", url, err)
	}
	in.Issued, in.Seq = false, 0
	s.mu.Lock()
	_, claimed := s.claims[url]
	s.mu.Unlock()
	if claimed {
		return false, nil
	}
	var old *State
	took := false
	err = s.db.Update(func(tx *bolt.Tx) error {
		old, took = nil, false
		ub := tx.Bucket(bucketURLs)
		if b := ub.Get([]byte(url)); b != nil {
			st, err := decodeState(b)
			if err != nil {
				return err
			}
			if st.Visits > in.Visits || st.Visits == in.Visits && !st.Issued {
				return nil
			}
			if err := unindex(tx, url, &st); err != nil {
				return err
			}
			old = &st
		}
		took = true
		if err := tx.Bucket(bucketDue).Put(dueKey(in.Due, url), nil); err != nil {
			return err
		}
		return ub.Put([]byte(url), appendState(nil, &in))
	})
	if err != nil || !took {
		return false, err
	}
	s.adopted(old, &in)
	return true, nil
}

// adopted updates the counters once in replaced old (nil: none).
func (s *Schedule) adopted(old, in *State) {
	from, freshFrom := -1.0, 0.0
	if old == nil {
		s.scheduled.Add(1)
	} else {
		from = old.Rate(s.pol.priorOf(old))
		freshFrom = freshness(from, old.Interval)
		if old.Issued {
			s.issued.Add(-1)
		}
	}
	to := in.Rate(s.pol.priorOf(in))
	s.pol.rates.Move(from, to)
	s.fresh.add(freshness(to, in.Interval) - freshFrom)
	s.poke()
}

// unindex removes url, of State st, from the issued set or the due index.
func unindex(tx *bolt.Tx, url string, st *State) error {
	if st.Issued {
		return tx.Bucket(bucketIssued).Delete([]byte(url))
	}
	return tx.Bucket(bucketDue).Delete(dueKey(st.Due, url))
}
