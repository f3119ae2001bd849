package revisit

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
)

// A claim is held twice. In RAM (Schedule.claims), it keeps a second
// fetch of the URL from starting while one runs. On disk, the issued
// set's value of the URL gets the claim's time after its issue number:
// it says that a fetch of the URL may have started at or after that
// time, for the recovery of a process that died before the visit was
// committed (recovery.go). Both go when the visit is committed (Visited,
// Failed) or the fetch let go (Unclaim).

// issuedValue is the issued set's value of a URL: its issue number, then,
// once claimed, the claim's time (Unix ns).
func issuedValue(seq uint64, claimed int64) []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 16), seq)
	if claimed != 0 {
		b = binary.BigEndian.AppendUint64(b, uint64(claimed))
	}
	return b
}

// claimedAt returns the claim's time recorded in an issued set's value
// (0: not claimed).
func claimedAt(v []byte) int64 {
	if len(v) < 16 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v[8:]))
}

// Claim is called before a revisit task of url is fetched: it returns the
// URL's State and true when the URL is issued and no other fetch holds it,
// and then holds it until Visited, Failed or Unclaim. The claim's time is
// committed before Claim returns: a fetch that starts after it is one the
// recovery of a crash looks for. False means the task is a duplicate of a
// revisit already done (or being done) for its due time: it must not be
// fetched.
func (s *Schedule) Claim(url string) (State, bool) {
	if !s.hold(url) {
		s.skipped.Add(1)
		return State{}, false
	}
	var st State
	var ok bool
	err := s.db.Batch(func(tx *bolt.Tx) error {
		ok = false
		b := tx.Bucket(bucketURLs).Get([]byte(url))
		if b == nil {
			return nil
		}
		var err error
		if st, err = decodeState(b); err != nil || !st.Issued {
			return err
		}
		ok = true
		return tx.Bucket(bucketIssued).Put([]byte(url), issuedValue(st.Seq, s.now().UnixNano()))
	})
	if err != nil {
		s.cfg.Logger.Error("revisit: claim", "url", url, "err", err)
	}
	if err != nil || !ok {
		s.release(url)
		s.skipped.Add(1)
		return State{}, false
	}
	return st, true
}

// Unclaim lets go of a claimed URL whose fetch did not happen (stopped,
// nothing stored): it stays issued, its claim's time is cleared, and its
// task goes back to the frontier.
func (s *Schedule) Unclaim(url string) {
	err := s.db.Batch(func(tx *bolt.Tx) error {
		ib := tx.Bucket(bucketIssued)
		v := ib.Get([]byte(url))
		if claimedAt(v) == 0 {
			return nil
		}
		return ib.Put([]byte(url), issuedValue(binary.BigEndian.Uint64(v), 0))
	})
	if err != nil {
		s.cfg.Logger.Error("revisit: unclaim", "url", url, "err", err)
	}
	s.release(url)
}

// hold takes url's claim in RAM; false when another fetch holds it.
func (s *Schedule) hold(url string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, held := s.claims[url]; held {
		return false
	}
	s.claims[url] = struct{}{}
	return true
}

// release lets go of url's claim in RAM.
func (s *Schedule) release(url string) {
	s.mu.Lock()
	delete(s.claims, url)
	s.mu.Unlock()
}
