package frontier

import (
	"fmt"
	"time"
)

// next returns a task that may start now, or nil: the first URL of the
// best visit state of the entry due first, if that entry is due.
func (s *scheduler) next(now int64) *Task {
	for len(s.wb.entries) > 0 && !s.limitHit && s.err == nil {
		e := s.wb.entries[0]
		if e.due > now {
			return nil
		}
		v := e.states[0]
		if s.rehome(v, e) {
			continue // its host has another address now (readdress.go)
		}
		rec, attempt, ok := s.pop(v)
		if !ok {
			s.settle(v)
			continue
		}
		if t := s.task(now, e, v, rec, attempt); t != nil {
			s.dispatch(t, e)
			return t
		}
	}
	return nil
}

// task decides what becomes of rec, the record v just gave up: a task, or
// nil when the URL was dropped, cut, or put back to wait.
func (s *scheduler) task(now int64, e *ipEntry, v *visitState, rec string, attempt int) *Task {
	sa, pq, h := s.locate(v, rec)
	if h.dead {
		s.drop(h, v.prefix(), rec)
		return nil
	}
	if !h.resolved {
		s.putBack(v, rec, attempt)
		s.waitHost(v, h)
		return nil
	}
	s.refreshDue(now, h)
	rs := s.robots.get(sa)
	if rs.dead {
		s.countDrop(DropRobotsUnavailable, 1)
		s.drops.one(DropRobotsUnavailable, v.prefix(), rec)
		return nil
	}
	if rs.rules != nil && now >= rs.expires(s.set) {
		rs.rules = nil
	}
	other, ok := s.otherEntry(now, e, v, h, rec, attempt)
	if !ok {
		return nil
	}
	t := &Task{SchemeAuthority: sa, Addr: h.addr, vs: v, other: other}
	if rs.rules == nil {
		return s.robotsTask(t, v, rs, rec, attempt)
	}
	return s.pageTask(t, v, rs, pq, rec, attempt)
}

// locate splits the URL of a record of v into scheme+authority and
// path+query, and finds its host.
func (s *scheduler) locate(v *visitState, rec string) (sa, pq string, h *hostState) {
	h = v.host
	if s.assign.kind == assignAuthority {
		return v.prefix(), rec[MetaLen:], h
	}
	url := v.prefix() + rec[MetaLen:]
	sa = string(schemeAuthorityOf([]byte(url)))
	if name := hostOf(sa); name != h.name {
		h = s.dns.host(name)
	}
	return sa, url[len(sa):], h
}

// otherEntry returns the workbench entry of the URL's own address when it
// is not v's (a policy that puts several hosts in one visit state): the IP
// rule holds for every request, so that entry must allow one too. When it
// does not, the URL is put back and v looks again when the entry may allow
// it (it is not watched for us: a busy entry is polled, at most every 10 ms
// or IP delay).
func (s *scheduler) otherEntry(now int64, e *ipEntry, v *visitState, h *hostState, rec string, attempt int) (*ipEntry, bool) {
	if h.addr == e.addr {
		return nil, true
	}
	other := s.wb.entryFor(h.addr)
	if other.inFlight >= s.wb.parIP || other.nextFetch > now {
		s.putBack(v, rec, attempt)
		v.nextFetch = max(v.nextFetch, other.nextFetch, later(now, max(s.set.IPDelay, 10*time.Millisecond)))
		s.wb.offer(v)
		return nil, false
	}
	return other, true
}

// robotsTask turns t into the robots.txt request of its authority, the URL
// going back to v, or withdraws v until the robots.txt in flight returns.
func (s *scheduler) robotsTask(t *Task, v *visitState, rs *robotsState, rec string, attempt int) *Task {
	s.putBack(v, rec, attempt)
	if rs.inFlight {
		v.setPhase(phaseRobots)
		s.wb.withdraw(v)
		rs.waiters = append(rs.waiters, v)
		return nil
	}
	t.PathQuery, t.Robots, t.RobotsHops = rs.path(), true, int(rs.hops)
	rs.inFlight = true
	return t
}

// pageTask turns t into the fetch of rec, unless another agent fetched it
// meanwhile (Config.FetchedElsewhere), robots.txt disallows it, a narrowed
// limit cuts it, or MaxURLs is reached (the URL then goes back).
func (s *scheduler) pageTask(t *Task, v *visitState, rs *robotsState, pq, rec string, attempt int) *Task {
	if attempt == 0 && s.f.cfg.FetchedElsewhere != nil && s.f.cfg.FetchedElsewhere(t.SchemeAuthority+pq) {
		return nil
	}
	if attempt == 0 && !rs.rules.Allowed(pq) {
		s.f.stats.RobotsDenied.Add(1)
		if f := s.f.cfg.RobotsDenied; f != nil {
			f(t.SchemeAuthority+pq, decodeMeta(rec[:MetaLen]))
		}
		return nil
	}
	if s.cut(v, t.SchemeAuthority, pq, rec, attempt) {
		return nil
	}
	if s.set.MaxURLs > 0 && s.dispatched >= s.set.MaxURLs {
		s.putBack(v, rec, attempt)
		s.limitHit = true
		s.f.atLimit.Store(true)
		return nil
	}
	s.setDispatched(s.dispatched + 1)
	if attempt == 0 {
		s.countPage(v, t.SchemeAuthority)
	}
	t.PathQuery, t.Attempt = pq, attempt
	t.Meta = decodeMeta(rec[:MetaLen])
	return t
}

// setDispatched sets the count of page fetches counted against MaxURLs
// and its copy in the statistics, which a restore reads back.
func (s *scheduler) setDispatched(n int64) {
	s.dispatched = n
	s.f.stats.PagesDispatched.Store(n)
}

// dispatch counts t in flight on its visit state and entries.
func (s *scheduler) dispatch(t *Task, e *ipEntry) {
	v := t.vs
	t.gen = s.f.gen.Load()
	v.inFlight++
	e.inFlight++
	if t.other != nil {
		t.other.inFlight++
		s.wb.fix(t.other)
	}
	s.inFlight++
	s.flying[t] = struct{}{}
	s.f.stats.InFlight.Add(1)
	s.wb.offer(v)
}

// cut reports whether a queued page URL of v (sa+pq, record rec) is
// refused at dispatch by a limit narrowed since it was queued (see
// Settings), and counts it. A retry (attempt > 0) is held to the depth
// limit and Keep like a first try, not to the per-key budget, which its
// first try already counted.
func (s *scheduler) cut(v *visitState, sa, pq, rec string, attempt int) bool {
	set := s.set
	cut := attempt == 0 && set.MaxURLsPerKey > 0 && s.pagesOf(v, sa) >= set.MaxURLsPerKey
	if !cut && (set.MaxDepth > 0 || set.Keep != nil) {
		m := decodeMeta(rec[:MetaLen])
		cut = (set.MaxDepth > 0 && int(m.Depth) > set.MaxDepth) || (set.Keep != nil && !set.Keep(sa+pq, m))
	}
	if cut {
		s.f.stats.CutAtDispatch.Add(1)
	}
	return cut
}

// pagesOf is the number of page fetches dispatched for authority sa of v.
func (s *scheduler) pagesOf(v *visitState, sa string) int64 {
	if s.assign.kind == assignAuthority {
		return v.pages
	}
	return s.pagesByKey[sa]
}

// countPage counts the first attempt of a page fetch dispatched for
// authority sa of v. The per-key budget counts scheme+authority, which is
// v's key only with the authority policy; with the others the count is kept
// by authority, and only while a budget is in force.
func (s *scheduler) countPage(v *visitState, sa string) {
	if s.assign.kind == assignAuthority {
		v.pages++
	} else if s.set.MaxURLsPerKey > 0 {
		s.pagesByKey[sa]++
	}
}

// uncountPage takes back a countPage (a fetch abandoned before it began).
func (s *scheduler) uncountPage(v *visitState, sa string) {
	if s.assign.kind == assignAuthority {
		v.pages--
		return
	}
	if n, ok := s.pagesByKey[sa]; ok && n <= 1 {
		delete(s.pagesByKey, sa)
	} else if ok {
		s.pagesByKey[sa] = n - 1
	}
}

// drop counts a URL whose host is dead and tells the drop log of it (rec
// is meta+suffix of prefix).
func (s *scheduler) drop(h *hostState, prefix, rec string) {
	s.countDrop(h.dropWhy(), 1)
	s.drops.one(h.dropWhy(), prefix, rec)
}

// pop takes the next record of v: retries first, then the RAM queue,
// refilled from the virtualizer when it runs dry.
func (s *scheduler) pop(v *visitState) (rec string, attempt int, ok bool) {
	if rs := v.retries(); len(rs) > 0 {
		r := rs[0]
		rs[0] = retry{}
		v.setRetries(rs[1:])
		s.addQueued(-1)
		return r.rec, r.attempt, true
	}
	if v.queue.len() == 0 && v.onDisk > 0 {
		if err := s.refill(v); err != nil {
			s.err = err
			return "", 0, false
		}
	}
	if v.queue.len() == 0 {
		return "", 0, false
	}
	before := v.queue.bytes()
	r, _ := v.queue.pop()
	s.queuedBytes += int64(v.queue.bytes() - before)
	s.addQueued(-1)
	return r, 0, true
}

// refill brings the next virtualized records of v back to RAM: a batch
// (sequential reads), smaller when the workbench is over budget.
func (s *scheduler) refill(v *visitState) error {
	n := int64(256)
	if s.queuedBytes >= s.set.WorkbenchBytes {
		n = 16
	}
	recs, err := s.f.cfg.Virtualizer.DequeueN(v.id, int(min(n, v.onDisk)))
	if err != nil {
		return fmt.Errorf("frontier: virtualizer: %w", err)
	}
	if len(recs) == 0 {
		s.f.log.Error("frontier: virtualizer lost records", "key", v.key, "expected", v.onDisk)
		s.addQueued(-v.onDisk)
		s.virtualized -= v.onDisk
		v.onDisk = 0
		return nil
	}
	before := v.queue.bytes()
	for _, r := range recs {
		v.queue.push(r)
	}
	s.queuedBytes += int64(v.queue.bytes() - before)
	v.onDisk -= int64(len(recs))
	s.virtualized -= int64(len(recs))
	return nil
}

// putBack returns a record to the head of v's queue.
func (s *scheduler) putBack(v *visitState, rec string, attempt int) {
	v.setRetries(append([]retry{{rec: rec, attempt: attempt}}, v.retries()...))
	s.addQueued(1)
}

// record rebuilds the queue record (meta+suffix) of a task of v.
func (t *Task) record() string {
	suffix := (t.SchemeAuthority + t.PathQuery)[len(t.vs.prefix()):]
	return string(t.Meta.Append(make([]byte, 0, MetaLen+len(suffix)))) + suffix
}
