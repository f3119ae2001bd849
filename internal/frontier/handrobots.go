package frontier

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/petrel-crawler/petrel/internal/robots"
)

// Robots rules handed over with a key. When a holder moves a key out
// (moveOut: a view change or an address change), the first record of each
// of the key's authorities that it forwards carries that authority's
// robots.txt rules, as the holder's robots table has them, in the record's
// robots section (the format is in handover.go): the rules' flat form and
// their remaining life. The receiver installs them on its robots table
// when it places the record, before the record is added to the key's
// visit state, so the key's first URL there is scheduled under them
// without a robots.txt request, and expires them when the holder would
// have.
//
// Invariants:
//   - only compiled rules (robots.Rules) that have not expired, of an
//     authority not dead, whose flat form is at most maxHandedRules bytes,
//     are handed; others are not, and the receiver fetches robots.txt as it
//     would without a hand-over;
//   - the remaining life is counted from the record's placing at the
//     receiver: the time the record spends between the two (the exchange,
//     the receiver's ready queue) is not subtracted;
//   - the receiver keeps rules of its own that expire later, and changes
//     nothing of an authority with a robots.txt request in flight, a
//     failure being retried or a redirect being followed: the rules it
//     installs are as if fetched there, and expire RobotsExpiry after that;
//   - records forwarded one at a time to a moved key later (forwardMoved
//     from add) carry no rules: the first hand-over carried them.

// maxHandedRules bounds the flat form of the rules a hand-over record
// carries (robots.txt bodies are read up to robots.MaxSize; rules compiled
// for one agent are most often a few hundred bytes).
const maxHandedRules = 64 << 10

// HandedRobots is the robots.txt rules of a hand-over record's authority,
// as the holder that sent the record had them.
type HandedRobots struct {
	Rules robots.Rules
	Left  time.Duration // until they expire, from the record's placing at the receiver
}

// appendTo appends the robots section of a hand-over record.
func (r *HandedRobots) appendTo(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(max(r.Left, 0)))
	dst = binary.AppendUvarint(dst, uint64(r.Rules.Size()))
	dst, _ = r.Rules.AppendBinary(dst)
	return dst
}

var errBadHandedRobots = errors.New("frontier: hand-over record with a malformed robots section")

// splitRobots reads a robots section off the start of b and returns it
// and the rest.
func splitRobots(b []byte) (*HandedRobots, []byte, error) {
	left, n := binary.Uvarint(b)
	if n <= 0 || left > 1<<62 {
		return nil, nil, errBadHandedRobots
	}
	b = b[n:]
	m, n := binary.Uvarint(b)
	if n <= 0 || m > maxHandedRules || m > uint64(len(b)-n) {
		return nil, nil, errBadHandedRobots
	}
	rules, err := robots.FromBinary(b[n : n+int(m)])
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errBadHandedRobots, err)
	}
	return &HandedRobots{Rules: rules, Left: time.Duration(left)}, b[n+int(m):], nil
}

// handedRobots returns the rules of sa to hand over with a record of it
// (nil when there are none to hand: see the invariants above).
func (s *scheduler) handedRobots(sa string) *HandedRobots {
	rs := s.robots.lookup(sa)
	if rs == nil || rs.dead || rs.rules == nil {
		return nil
	}
	rules, ok := rs.rules.(robots.Rules)
	left := rs.expires(s.set) - s.f.now()
	if !ok || left <= 0 || rules.Size() > maxHandedRules {
		return nil
	}
	s.f.stats.HandedOverRobots.Add(1)
	return &HandedRobots{Rules: rules, Left: time.Duration(left)}
}

// takeRobots installs rules handed over for sa, unless sa's state here
// has later-expiring rules or is busy with robots.txt (see above).
func (s *scheduler) takeRobots(sa string, hr *HandedRobots) {
	if hr == nil || hr.Left <= 0 {
		return
	}
	rs := s.robots.get(sa)
	at := later(s.f.now(), hr.Left)
	if rs.dead || !rs.idle() || (rs.rules != nil && rs.expires(s.set) >= at) {
		return
	}
	rs.rules, rs.fetched, rs.stored = hr.Rules, at-int64(s.set.RobotsExpiry), false
	s.f.stats.TakenOverRobots.Add(1)
}
