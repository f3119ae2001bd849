package frontier

import (
	"time"

	"github.com/petrel-crawler/petrel/internal/robots"
)

// The robots table holds the robots.txt state of the scheme+authorities
// met: in RAM those in use, the others in Config.RobotsStore (when set),
// from which a state is read back when its authority is met again.
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
//     dropped, never fetched;
//   - only an idle state leaves RAM (nothing in flight, no waiters, no
//     failure being retried, no redirect being followed), after its
//     rules (compiled, robots.Rules) or its death are in the store; so the
//     store answers for it as RAM did, and a robots.txt is fetched again
//     only when its rules expire (RobotsExpiry, from the end of the fetch
//     that gave them), when they were not compiled rules (kept in RAM), or
//     when the store lost the record (a crash before it was written, a
//     store error: counted in RobotsStoreErrors);
//   - no *robotsState is kept across a trim: callers look states up by
//     authority (get) each time.

// RobotsRules is what the frontier needs of a parsed robots.txt. Rules
// that are a robots.Rules can leave RAM for Config.RobotsStore; others stay
// in RAM.
type RobotsRules interface {
	Allowed(pathQuery string) bool
	CrawlDelay() time.Duration
}

// RobotsStore keeps the robots.txt states of authorities the frontier let
// go of in RAM (robots.Store is one). It is used from the scheduler
// goroutine only.
type RobotsStore interface {
	Get(authority string) (robots.Entry, bool, error)
	Put(authority string, e robots.Entry) error
	// Flush hands what Put buffers to the file system, so that it
	// survives the process (not the machine).
	Flush() error
}

// robotsState is the robots.txt of one scheme+authority.
type robotsState struct {
	rules    RobotsRules // nil: not fetched, expired, or unavailable for now
	fetched  int64       // end of the fetch that gave rules; they expire RobotsExpiry later
	redirect string      // the path+query the last robots.txt response redirected to ("": /robots.txt)
	waiters  []*visitState
	fails    int32
	hops     int32 // redirects followed for the fetch going on
	inFlight bool
	dead     bool // unavailable after every retry: the authority's URLs are dropped
	used     bool // looked up since the last trim passed it (its second chance)
	stored   bool // the store holds the rules (or the death) this state has
}

// expires is when the rules expire under the settings in force (a lowered
// RobotsExpiry holds for rules fetched before the change).
func (r *robotsState) expires(set *liveSettings) int64 { return later(r.fetched, set.RobotsExpiry) }

// crawlDelay is the Crawl-delay of the rules, up to the cap in force (0
// without rules).
func (r *robotsState) crawlDelay(set *liveSettings) time.Duration {
	if r == nil || r.rules == nil {
		return 0
	}
	return min(r.rules.CrawlDelay(), set.CrawlDelayCap)
}

// idle reports whether the state may leave RAM.
func (r *robotsState) idle() bool {
	return !r.inFlight && len(r.waiters) == 0 && (r.fails == 0 || r.dead) && r.redirect == "" && r.hops == 0
}

// robotsTable maps scheme+authority to its robots.txt state.
type robotsTable struct {
	m     map[string]*robotsState
	store RobotsStore // nil: every state stays in RAM
	max   int         // states held in RAM beyond which trim moves idle ones to the store
	f     *Frontier
	// trimAfter is the frontier's clock before which no trim runs (the
	// last found nothing to move: every state in RAM busy).
	trimAfter int64
}

// defaultRobotsCache is the robots table's size when RobotsCache is 0
// (Settings not from the table).
const defaultRobotsCache = 1 << 14

func newRobotsTable(f *Frontier) robotsTable {
	t := robotsTable{m: make(map[string]*robotsState), store: f.cfg.RobotsStore, max: f.cfg.RobotsCache, f: f} // 0: the default
	if t.max <= 0 {
		t.max = defaultRobotsCache
	}
	return t
}

// get returns the state of sa: the one in RAM, else the store's, else a
// new one.
func (t *robotsTable) get(sa string) *robotsState {
	if r := t.m[sa]; r != nil {
		r.used = true
		return r
	}
	r := t.load(sa)
	if r == nil {
		r = &robotsState{}
	}
	r.used = true
	t.m[sa] = r
	return r
}

// lookup returns the state of sa if RAM or the store has one, without
// creating it.
func (t *robotsTable) lookup(sa string) *robotsState {
	if r := t.m[sa]; r != nil {
		return r
	}
	if r := t.load(sa); r != nil {
		t.m[sa] = r
		return r
	}
	return nil
}

// load reads sa's state back from the store (nil when it has none).
func (t *robotsTable) load(sa string) *robotsState {
	if t.store == nil {
		return nil
	}
	e, ok, err := t.store.Get(sa)
	if err != nil {
		t.storeFailed("read", sa, err)
		return nil
	}
	if !ok {
		return nil
	}
	t.f.stats.RobotsLoaded.Add(1)
	r := &robotsState{stored: true, dead: e.Dead}
	if !e.Dead {
		r.rules, r.fetched = e.Rules, t.f.at(e.When)
	}
	return r
}

// trim moves idle states to the store, the least recently used first
// (CLOCK: a state looked up since the last pass gets a second chance),
// once RAM holds more than max of them, down to 7/8 of max. When it finds
// none to move (all busy), the next one waits a tick.
func (t *robotsTable) trim(now int64) {
	if t.store == nil || len(t.m) <= t.max || now < t.trimAfter {
		return
	}
	before, target := len(t.m), t.max-t.max/8
	defer func() {
		if len(t.m) == before {
			t.trimAfter = now + int64(tickEvery)
		}
	}()
	for pass := 0; pass < 2 && len(t.m) > target; pass++ {
		for sa, r := range t.m {
			if len(t.m) <= target {
				break
			}
			if !r.idle() {
				continue
			}
			if r.used {
				r.used = false
				continue
			}
			if t.save(sa, r) {
				delete(t.m, sa)
			}
		}
	}
}

// saveAll puts every state in RAM that has something to keep in the store
// and flushes it (at a checkpoint and at Close), so that a crawl resumed on
// the same directory, even after a kill, fetches none of those robots.txt
// again within their expiry. The states stay in RAM.
func (t *robotsTable) saveAll() {
	if t.store == nil {
		return
	}
	for sa, r := range t.m {
		if r.idle() || r.dead {
			t.save(sa, r)
		}
	}
	if err := t.store.Flush(); err != nil {
		t.storeFailed("flush", "", err)
	}
}

// save puts r in the store unless it holds it already; it reports whether
// r may leave RAM (rules of another type than robots.Rules stay).
func (t *robotsTable) save(sa string, r *robotsState) bool {
	if r.stored {
		return true
	}
	e := robots.Entry{Dead: r.dead}
	switch rules := r.rules.(type) {
	case nil:
		if !r.dead {
			return true // nothing learnt, or rules expired: fetched again when needed
		}
		e.When = t.f.wall(t.f.now())
	case robots.Rules:
		e.When, e.Rules = t.f.wall(r.fetched), rules
		if r.dead {
			e.Rules = robots.Rules{}
		}
	default:
		if !r.dead {
			return false
		}
	}
	if err := t.store.Put(sa, e); err != nil {
		t.storeFailed("write", sa, err)
		return true
	}
	r.stored = true
	return true
}

// storeFailed counts and logs a failure of the store; the state it
// concerned is fetched again when needed.
func (t *robotsTable) storeFailed(op, sa string, err error) {
	if t.f.stats.RobotsStoreErrors.Add(1) <= 10 {
		t.f.log.Error("frontier: robots store "+op+" failed; the robots.txt will be fetched again", "authority", sa, "err", err)
	}
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
	if o.Result == Fetched || o.Result == RetryLater {
		s.hostUp(v)
	}
	switch {
	case o.Result == Abandoned:
	case o.Result == Blocked:
		if t.Host() == v.host.name {
			s.purge(v, DropBlocked)
		}
	case o.Result == Unreachable:
		// The host is down, not its robots.txt: v waits (hostdown.go).
		rs.redirect, rs.hops = "", 0
		if wait, gone := s.hostDown(v, end, delay); gone {
			s.purge(v, DropHostDown)
		} else {
			delay, why = wait, DelayHostDown
		}
	case o.Result == Fetched && o.RobotsRedirect != "":
		rs.redirect, rs.hops = o.RobotsRedirect, rs.hops+1
	case o.Result == Fetched && o.Robots != nil:
		rs.rules, rs.fetched, rs.fails, rs.stored = o.Robots, end, 0, false
		rs.redirect, rs.hops = "", 0
		delay, why = s.keyDelay(t.SchemeAuthority, o)
	default:
		// robots.txt unavailable (5xx, unreachable): nothing of the
		// authority is fetched for now; retry with backoff, give up after
		// the retries.
		rs.fails++
		rs.redirect, rs.hops = "", 0
		if int(rs.fails) > s.set.MaxRetries {
			rs.dead, rs.stored = true, false
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

// keyCrawlDelay is the Crawl-delay of v's authority under the settings in
// force (authority policy; 0 for other keys, whose authorities vary), read
// back from the store only for a key waiting for its next fetch.
func (s *scheduler) keyCrawlDelay(v *visitState) time.Duration {
	if s.assign.kind != assignAuthority {
		return 0
	}
	rs := s.robots.m[v.key]
	if rs == nil && v.nextFetch > s.f.now() {
		rs = s.robots.lookup(v.key)
	}
	return rs.crawlDelay(s.set)
}
