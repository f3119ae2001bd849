package revisit

import (
	"fmt"
	"net/http"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/petrel-crawler/petrel/internal/store"
)

// claimSlack is how long before the earliest claim a WARC file may have
// been last modified and still be read: a file's modification time is
// the kernel's coarse clock, which may lag the claim's by some
// milliseconds.
const claimSlack = 2 * time.Second

// recoverClaims settles, when the schedule opens, the claims the last
// process left recorded: each one's fetch may have started, and its
// response been stored, before the process died without committing the
// visit. For each such URL, a response or revisit record of it in the
// WARC files of Config.WARCDir dated at or after its claim is that
// fetch's (the URL was issued, so no other fetch of it started since):
// the visit is committed from the record, and the URL is no longer
// issued (its tasks are refused by Claim, not fetched again). A claimed
// URL with no such record keeps its issue, its claim cleared: Run issues
// it again (Config.Reissue) or the frontier still holds its task. The
// WARC files must be whole and no fetch running.
//
// RAM: the claims (at most the issued set, bounded by MaxIssued) and the
// visits found; the files are read one record at a time, only those
// modified since the earliest claim.
func (s *Schedule) recoverClaims() error {
	if s.cfg.WARCDir == "" {
		return nil
	}
	claims, oldest, err := s.recordedClaims()
	if err != nil || len(claims) == 0 {
		return err
	}
	found := map[string]Visit{}
	serr := store.EachFetchRecord([]string{s.cfg.WARCDir}, time.Unix(0, oldest).Add(-claimSlack), func(c store.FetchRecord) error {
		at, ok := claims[c.URL]
		// A WARC-Date is the fetch's start to the microsecond.
		if ok && !c.Date.Before(time.Unix(0, at).Truncate(time.Microsecond)) {
			found[c.URL] = visitOf(c)
		}
		return nil
	})
	if serr != nil {
		// What was read stands; a claim whose record was not read is
		// fetched again (a due time done twice, never one lost).
		s.cfg.Logger.Warn("revisit: WARC files not read through; the claims not found there are issued again", "err", serr)
	}
	if err := s.settleClaims(claims, found); err != nil {
		return err
	}
	s.cfg.Logger.Info("revisit claims of the last process settled", "claims", len(claims),
		"visits committed from their WARC records", len(found), "issued again", len(claims)-len(found))
	return nil
}

// recordedClaims returns the claims' times (Unix ns) by URL in the issued
// set, and the earliest.
func (s *Schedule) recordedClaims() (map[string]int64, int64, error) {
	claims := map[string]int64{}
	oldest := int64(0)
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketIssued).ForEach(func(k, v []byte) error {
			if at := claimedAt(v); at != 0 {
				claims[string(k)] = at
				if oldest == 0 || at < oldest {
					oldest = at
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, 0, fmt.Errorf("revisit: read claims: %w", err)
	}
	return claims, oldest, nil
}

// settleClaims commits, in one transaction, the visit found of each
// claimed URL, and clears the claim of each other.
func (s *Schedule) settleClaims(claims map[string]int64, found map[string]Visit) error {
	var outs []visitOutcome
	err := s.db.Update(func(tx *bolt.Tx) error {
		outs = outs[:0]
		ib := tx.Bucket(bucketIssued)
		for url := range claims {
			v, ok := found[url]
			if !ok {
				st, known, err := stateIn(tx, url)
				if err != nil || !known {
					return err
				}
				if err := ib.Put([]byte(url), issuedValue(st.Seq, 0)); err != nil {
					return err
				}
				continue
			}
			o, err := s.apply(tx, url, nil, v)
			if err != nil {
				return fmt.Errorf("%s: %w", url, err)
			}
			outs = append(outs, o)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("revisit: settle claims: %w", err)
	}
	for _, o := range outs {
		s.account(o)
	}
	return nil
}

// stateIn returns url's State in tx, if the schedule has it.
func stateIn(tx *bolt.Tx, url string) (State, bool, error) {
	b := tx.Bucket(bucketURLs).Get([]byte(url))
	if b == nil {
		return State{}, false, nil
	}
	st, err := decodeState(b)
	return st, err == nil, err
}

// visitOf is the Visit a stored capture records: what the agent tells
// Visited after storing it, read back from its record.
func visitOf(c store.FetchRecord) Visit {
	v := Visit{Time: c.Date, Status: c.Status, Digest: ParseDigest(c.PayloadDigest), ETag: c.ETag,
		RecordID: ParseRecordID(c.RecordID), Full: !c.Revisit, Bytes: c.Bytes}
	if lm, err := http.ParseTime(c.LastModified); err == nil {
		v.LastModified = lm
	}
	return v
}
