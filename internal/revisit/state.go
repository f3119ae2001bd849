package revisit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/petrel-crawler/petrel/internal/frontier"
)

// State is what the schedule keeps of one URL: when it is due, how it is
// visited (its Meta), the validators and the capture of its last visit, and
// the history its policy estimates from. Times are Unix nanoseconds (0:
// none).
type State struct {
	Meta     [MetaLen]byte // the URL's frontier Meta, as first fetched
	Due      int64         // when it is due next
	Issued   bool          // handed to the frontier for Due, not yet visited
	Seq      uint64        // the number (with Issued)
	Interval int64         // the policy's current interval, ns
	Last     int64         // the last visit

	Visits, Changes uint32 // visits after the first; those that found a change
	// Exposure is the time, ns, the URL is known to have stayed
	// unchanged: per visit, the interval since the previous one, or (a
	// change, with a Last-Modified inside that interval) the time since
	// the last change, which Last-Modified dates. Timed counts those
	// changes.
	Exposure int64
	Timed    uint32
	// LMWrong says the URL's Last-Modified moved at a visit that found its
	// payload unchanged (as a server that sends the time of the request
	// does): it does not date the changes, and no longer times them.
	LMWrong bool

	ETag         string // of the last capture ("" none); at most MaxETag bytes
	LastModified int64  // of the last capture, Unix seconds (0 none)
	Digest       [20]byte
	RecordID     [16]byte // the last full capture's WARC-Record-ID (a UUID)
	RecordDate   int64    // its WARC-Date
	Size         int64    // its response's bytes on the wire: what a 304 spares
	// Hint is the period, ns, of the changefreq a sitemap gave the URL
	// before its first visit (0: none): its first interval and the change
	// rate assumed of it until its visits say more.
	Hint int64
}

// MetaLen is the length of the frontier Meta a State keeps.
const MetaLen = frontier.MetaLen

// MaxETag bounds the ETag kept; a longer one is not kept (no If-None-Match).
const MaxETag = 128

// stateVersion is the version of the encoding appendState writes;
// decodeState also reads version 2, which has no flags, and version 1,
// which has no Size nor Hint either.
const stateVersion = 3

// fixedLen is the encoded length of a version-3 State without its ETag;
// shorter is how much shorter one of each older version is.
const fixedLen = 1 + MetaLen + 8 + 1 + 8 + 8 + 8 + 4 + 4 + 8 + 4 + 8 + 20 + 16 + 8 + 8 + 8 + 1 + 1

var shorter = [stateVersion + 1]int{1: 17, 2: 1}

// appendState appends the encoding of st: a version byte, the fixed
// fields big-endian in declaration order (ETag excepted), then the ETag's
// length (one byte) and bytes.
func appendState(b []byte, st *State) []byte {
	b = append(b, stateVersion)
	b = append(b, st.Meta[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(st.Due))
	b = append(b, boolByte(st.Issued))
	b = binary.BigEndian.AppendUint64(b, st.Seq)
	b = binary.BigEndian.AppendUint64(b, uint64(st.Interval))
	b = binary.BigEndian.AppendUint64(b, uint64(st.Last))
	b = binary.BigEndian.AppendUint32(b, st.Visits)
	b = binary.BigEndian.AppendUint32(b, st.Changes)
	b = binary.BigEndian.AppendUint64(b, uint64(st.Exposure))
	b = binary.BigEndian.AppendUint32(b, st.Timed)
	b = binary.BigEndian.AppendUint64(b, uint64(st.LastModified))
	b = append(b, st.Digest[:]...)
	b = append(b, st.RecordID[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(st.RecordDate))
	b = binary.BigEndian.AppendUint64(b, uint64(st.Size))
	b = binary.BigEndian.AppendUint64(b, uint64(st.Hint))
	b = append(b, boolByte(st.LMWrong)) // flags: bit 0 LMWrong
	b = append(b, byte(len(st.ETag)))
	return append(b, st.ETag...)
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

var errState = errors.New("revisit: corrupt state record")

// decodeState decodes a State encoded by appendState.
func decodeState(b []byte) (State, error) {
	var st State
	if len(b) == 0 || b[0] < 1 || b[0] > stateVersion || len(b) < fixedLen-shorter[b[0]] {
		return st, fmt.Errorf("%w (%d bytes)", errState, len(b))
	}
	p := 1
	u64 := func() uint64 { v := binary.BigEndian.Uint64(b[p:]); p += 8; return v }
	u32 := func() uint32 { v := binary.BigEndian.Uint32(b[p:]); p += 4; return v }
	copy(st.Meta[:], b[p:])
	p += MetaLen
	st.Due = int64(u64())
	st.Issued = b[p] == 1
	p++
	st.Seq = u64()
	st.Interval = int64(u64())
	st.Last = int64(u64())
	st.Visits, st.Changes = u32(), u32()
	st.Exposure = int64(u64())
	st.Timed = u32()
	st.LastModified = int64(u64())
	p += copy(st.Digest[:], b[p:])
	p += copy(st.RecordID[:], b[p:])
	st.RecordDate = int64(u64())
	if b[0] >= 2 {
		st.Size, st.Hint = int64(u64()), int64(u64())
	}
	if b[0] >= 3 {
		st.LMWrong = b[p]&1 != 0
		p++
	}
	n := int(b[p])
	p++
	if len(b) != p+n {
		return st, fmt.Errorf("%w (ETag of %d bytes in %d)", errState, n, len(b)-p)
	}
	st.ETag = string(b[p:])
	return st, nil
}

// dueKey is the key of the schedule's time index: the due time (8 bytes,
// big-endian, so that keys sort by time), then the URL.
func dueKey(due int64, url string) []byte {
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(url)), uint64(max(due, 0))), url...)
}

// Rate returns the estimated change rate of the URL, changes per second,
// from its history. With changes seen, it is the estimator of Cho and
// Garcia-Molina for visits that only say "changed" or "not",
// r = −ln((n−X+0.5)/(n+0.5)) / I (n visits, X changes, I the mean
// interval), or, when Last-Modified dated at least half of the changes,
// the changes over the time the URL is known to have stayed unchanged
// (Exposure T: with Poisson changes the time since the last change
// before a visit is exponential, so T is a sum of X exponential times,
// however many changes each interval held, and (X−⅓)/T is the rate's
// median-unbiased estimate). Neither goes below the estimate shrunk
// toward prior by half a change over 0.5/prior seconds,
// (X+0.5)/(T+0.5/prior), which is also the estimate when no change was
// seen, where Cho and Garcia-Molina's is 0 (a page found unchanged once
// would be visited every Max: too seldom for most pages). It returns
// prior before the second visit.
func (st *State) Rate(prior float64) float64 {
	n, x := float64(st.Visits), float64(st.Changes)
	if n == 0 || st.Exposure <= 0 {
		return prior
	}
	expo := float64(st.Exposure) / 1e9
	shrunk := (x + 0.5) / (expo + 0.5/prior)
	switch {
	case x == 0:
		return shrunk
	case st.dated():
		return max((x-1.0/3)/expo, shrunk)
	}
	return max(-math.Log((n-x+0.5)/(n+0.5))/(expo/n), shrunk)
}

// dated says Last-Modified dated at least half of the changes st found,
// so that its rate is estimated from their times.
func (st *State) dated() bool { return st.Timed > 0 && float64(st.Timed) >= float64(st.Changes)/2 }

// twiceDated says at least two changes were dated by a Last-Modified
// still trusted, and the rate is estimated from the dates: enough for an
// interval of Max to be taken at once.
func (st *State) twiceDated() bool { return st.Timed >= 2 && !st.LMWrong && st.dated() }

// watch adds to st's history a visit at now (Unix ns) that found the URL
// changed or not; lm is the response's Last-Modified (Unix ns, 0: none),
// full says the response was a 200 (not a 304). The first visit only sets
// Last. It is called before st takes the response's validators.
func (st *State) watch(now, lm int64, changed, full bool) {
	if full && !changed && lm != 0 && st.LastModified != 0 && lm/1e9 != st.LastModified {
		st.LMWrong = true
	}
	if st.Last != 0 && now > st.Last {
		st.Visits++
		if changed {
			st.Changes++
			if lm != 0 && !st.LMWrong && lm > st.Last && lm <= now {
				st.Timed++
				st.Exposure += now - lm
			} else {
				st.Exposure += now - st.Last
			}
		} else {
			st.Exposure += now - st.Last
		}
	}
	st.Last = now
}

// time returns the time of Unix nanoseconds ns (zero for 0).
func unixTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
