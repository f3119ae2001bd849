package frontier

import "time"

// A host that cannot be reached (Unreachable: connection refused, a
// connect timeout, no route) is down, not its URLs: the URL tried goes
// back to the head of its visit state's queue with its tries untouched,
// and the visit state waits before its next try, the wait doubling at each
// failed try from the key's delay (at least minHostDownWait) up to
// HostDownBackoff. Its first response ends the outage. A visit state whose
// host has been unreachable for HostDownGiveUp, from the end of its first
// failed try, is purged (DropHostDown): each of its URLs is told to
// Config.Dropped.
//
// Invariants:
//   - the wait is never below the key's delay: a backoff never shortens
//     a politeness delay;
//   - an outage lives in the visit state's rare part (visitRare.down), so
//     a key with one never settles idle, and is not saved by a checkpoint:
//     a resumed crawl tries the host again and starts a new outage.

// minHostDownWait is the first wait of a key whose delay is shorter.
const minHostDownWait = 100 * time.Millisecond

// outage is a visit state's host being unreachable.
type outage struct {
	since int64         // the frontier's clock: end of the first failed try
	last  int64         // end of the last failed try
	wait  time.Duration // the last wait set
	tries int32         // failed tries so far
}

// hostDown records a failed try of v ending at end whose host could not
// be reached, the key's delay being delay. It returns the wait before v's
// next try, or reports that the host is given up: unreachable for
// HostDownGiveUp.
func (s *scheduler) hostDown(v *visitState, end int64, delay time.Duration) (time.Duration, bool) {
	s.f.stats.HostDownWaits.Add(1)
	o := v.outage()
	if o == nil {
		o = &outage{since: end}
		v.setOutage(o)
		s.f.log.Info("frontier: host unreachable, its URLs wait", "key", v.key)
	}
	o.tries++
	o.last = end
	giveUp, most := s.set.HostDownGiveUp, s.set.HostDownBackoff
	if giveUp <= 0 {
		giveUp = time.Hour
	}
	if most <= 0 {
		most = 5 * time.Minute
	}
	if time.Duration(end-o.since) >= giveUp {
		s.f.log.Info("frontier: host unreachable past --host-down-give-up, its URLs dropped", "key", v.key,
			"for", time.Duration(end-o.since).Round(time.Millisecond), "tries", o.tries)
		return 0, true
	}
	o.wait = min(max(2*o.wait, delay, minHostDownWait), most)
	return max(o.wait, delay), false
}

// hostUp ends the outage of v's host, if any: it answered.
func (s *scheduler) hostUp(v *visitState) {
	if o := v.outage(); o != nil {
		s.f.log.Info("frontier: host answers again", "key", v.key, "tries", o.tries)
		v.setOutage(nil)
	}
}
