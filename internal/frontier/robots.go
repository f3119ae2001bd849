package frontier

import "time"

// The robots table holds the robots.txt of every scheme+authority met.
// Owned by the scheduler goroutine.
//
// Invariants:
//   - at most one robots.txt request per authority is in flight (inFlight),
//     robots.txt redirect hops included: a hop is a new task for the same
//     authority, dispatched by the scheduler after the key's and the IP's
//     delays, like any request;
//   - no page of an authority is dispatched while its rules are nil (not
//     fetched, expired, or unavailable for now); visit states that need
//     them wait in waiters (phase robots) until the fetch ends;
//   - once dead (unavailable after every retry), an authority's URLs are
//     dropped, never fetched.

// RobotsRules is what the frontier needs of a parsed robots.txt.
type RobotsRules interface {
	Allowed(pathQuery string) bool
	CrawlDelay() time.Duration
}

// robotsState is the robots.txt of one scheme+authority.
type robotsState struct {
	rules    RobotsRules // nil: not fetched, expired, or unavailable for now
	fetched  int64       // end of the fetch that gave rules; they expire RobotsExpiry later
	inFlight bool
	fails    int
	dead     bool   // unavailable after every retry: the authority's URLs are dropped
	redirect string // the path+query the last robots.txt response redirected to ("": /robots.txt)
	hops     int    // redirects followed for the fetch going on
	waiters  []*visitState
}

// expires is when the rules expire under the settings in force (a lowered
// RobotsExpiry holds for rules fetched before the change).
func (r *robotsState) expires(set *liveSettings) int64 { return r.fetched + int64(set.RobotsExpiry) }

// crawlDelay is the Crawl-delay of the rules, up to the cap in force (0
// without rules).
func (r *robotsState) crawlDelay(set *liveSettings) time.Duration {
	if r == nil || r.rules == nil {
		return 0
	}
	return min(r.rules.CrawlDelay(), set.CrawlDelayCap)
}

// robotsTable maps scheme+authority to its robots.txt state.
type robotsTable struct {
	m map[string]*robotsState
}

// get returns the state of sa, creating it.
func (t *robotsTable) get(sa string) *robotsState {
	r := t.m[sa]
	if r == nil {
		r = &robotsState{}
		t.m[sa] = r
	}
	return r
}

// path is what the next robots.txt request of the authority asks for.
func (r *robotsState) path() string {
	if r.redirect != "" {
		return r.redirect
	}
	return "/robots.txt"
}

// releaseRobots takes back a robots.txt task of v and returns the delay
// before the next request to v: rules in force, a redirect hop to follow,
// or a failure retried with backoff (the authority's URLs dropped after the
// retries).
func (s *scheduler) releaseRobots(v *visitState, t *Task, o Outcome, end int64) (time.Duration, DelayReason) {
	rs := s.robots.get(t.SchemeAuthority)
	rs.inFlight = false
	delay, why := s.keyDelay(t.SchemeAuthority, o)
	switch {
	case o.Result == Abandoned:
	case o.Result == Blocked:
		if t.Host() == v.host.name {
			s.purge(v, DropBlocked)
		}
	case o.Result == Fetched && o.RobotsRedirect != "":
		rs.redirect, rs.hops = o.RobotsRedirect, rs.hops+1
	case o.Result == Fetched && o.Robots != nil:
		rs.rules, rs.fetched, rs.fails = o.Robots, end, 0
		rs.redirect, rs.hops = "", 0
		delay, why = s.keyDelay(t.SchemeAuthority, o)
	default:
		// robots.txt unavailable (5xx, unreachable): nothing of the
		// authority is fetched for now; retry with backoff, give up after
		// the retries.
		rs.fails++
		rs.redirect, rs.hops = "", 0
		if rs.fails > s.set.MaxRetries {
			rs.dead = true
			s.f.log.Info("frontier: robots.txt unavailable, URLs dropped", "authority", t.SchemeAuthority)
			if v.prefix() == t.SchemeAuthority || s.assign.kind == assignAuthority {
				s.purge(v, DropRobotsUnavailable)
			}
		} else if b := s.set.RetryDelay << min(rs.fails-1, 8); b > delay {
			delay, why = b, DelayRobotsBackoff
		}
	}
	waiters := rs.waiters
	rs.waiters = nil
	s.wake(waiters)
	return delay, why
}
