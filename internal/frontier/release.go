package frontier

import "time"

// release takes a task back from a fetcher and computes the next allowed
// times of its visit state and workbench entries: the end of the exchange
// plus the key's delay (see keyDelay, raised for retries) and the IP delay.
func (s *scheduler) release(o Outcome) {
	t := o.Task
	v, e := t.vs, t.vs.entry
	v.inFlight--
	e.inFlight--
	s.inFlight--
	delete(s.flying, t)
	s.f.stats.InFlight.Add(-1)
	var end int64
	if o.End.IsZero() {
		end = s.f.now()
	} else {
		end = s.f.at(o.End)
	}
	if oe := t.other; oe != nil {
		oe.inFlight--
		oe.nextFetch = max(oe.nextFetch, later(end, s.set.IPDelay))
		s.wb.fix(oe)
	}
	var delay time.Duration
	var why DelayReason
	if t.Robots {
		delay, why = s.releaseRobots(v, t, o, end)
	} else {
		delay, why = s.releasePage(v, t, o, end)
	}
	v.nextFetch = max(v.nextFetch, later(end, delay))
	v.delay, v.delayWhy = delay, why
	e.nextFetch = max(e.nextFetch, later(end, s.set.IPDelay))
	if e.held {
		e.heldNext = max(e.heldNext, later(end, s.set.IPDelay))
	}
	s.settle(v)
	s.wb.fix(e)
	s.f.released.Notify()
}

// releasePage takes back a page task of v: a retry is queued, failures
// counted (v purged after MaxFailures in a row), an abandoned URL put back,
// an unreachable one put back while its host backs off (hostdown.go).
func (s *scheduler) releasePage(v *visitState, t *Task, o Outcome, end int64) (time.Duration, DelayReason) {
	delay, why := s.keyDelay(t.SchemeAuthority, o)
	if o.Result == Fetched || o.Result == RetryLater {
		s.hostUp(v)
	}
	switch o.Result {
	case Fetched:
		v.failures = 0
	case Unreachable:
		s.unfetched(v, t)
		if wait, gone := s.hostDown(v, end, delay); gone {
			s.purge(v, DropHostDown)
		} else {
			delay, why = wait, DelayHostDown
		}
	case RetryLater:
		if t.Attempt < s.set.MaxRetries {
			v.setRetries(append(v.retries(), retry{rec: t.record(), attempt: t.Attempt + 1}))
			s.addQueued(1)
			s.f.stats.Retries.Add(1)
			if s.set.RetryDelay > delay {
				delay, why = s.set.RetryDelay, DelayRetry
			}
			break
		}
		fallthrough
	case Failed:
		v.failures++
		if o.Result == RetryLater {
			s.drops.one(DropRetries, v.prefix(), t.record())
		}
		if int(v.failures) >= s.f.cfg.MaxFailures {
			s.purge(v, DropBrokenHost)
		}
	case Blocked:
		if hostOf(t.SchemeAuthority) == v.host.name {
			s.purge(v, DropBlocked)
		}
	case Abandoned:
		s.unfetched(v, t)
	}
	return delay, why
}

// unfetched puts a page task of v that did not reach its server back at
// the head of v's queue, and takes back what its dispatch counted.
func (s *scheduler) unfetched(v *visitState, t *Task) {
	s.putBack(v, t.record(), t.Attempt)
	s.setDispatched(s.dispatched - 1)
	if t.Attempt == 0 {
		s.uncountPage(v, t.SchemeAuthority)
	}
}

// keyDelay is the gap before the next request to a visit state after a
// fetch from authority sa, and the rule that set it: the host delay,
// raised by the adaptive factor, robots.txt Crawl-delay (up to its cap) and
// Retry-After (up to MaxDelay).
func (s *scheduler) keyDelay(sa string, o Outcome) (time.Duration, DelayReason) {
	c := s.set
	d, why := c.HostDelay, DelayHost
	if c.DelayFactor > 0 && o.Duration > 0 {
		if a := min(time.Duration(c.DelayFactor*float64(o.Duration)), c.MaxDelay); a > d {
			d, why = a, DelayAdaptive
		}
	}
	if cd := s.robots.get(sa).crawlDelay(c); cd > d {
		d, why = cd, DelayCrawlDelay
	}
	if o.RetryAfter > d {
		d, why = min(o.RetryAfter, c.MaxDelay), DelayRetryAfter
	}
	return d, why
}

// purge drops a broken visit state's URLs (BUbiNG's brokenVisitStates),
// counted by countDrop.
func (s *scheduler) purge(v *visitState, why DropReason) {
	if v.broken() {
		return
	}
	n := s.empty(v, why)
	s.f.stats.BrokenKeys.Add(1)
	s.countDrop(why, n)
	s.f.log.Info("frontier: visit state purged as broken", "key", v.key, "urls", n, "why", why.String())
}

// countDrop counts n URLs dropped for why: AddressRefused for a refused
// address, Blocked (and BlockedQueued) for the blocklist, PurgedURLs
// otherwise (over-budget URLs are counted where they are refused, a URL
// whose tries are used up by each try's FetchErrors).
func (s *scheduler) countDrop(why DropReason, n int64) {
	st := s.f.stats
	switch why {
	case DropAddress:
		st.AddressRefused.Add(n)
	case DropBlocked:
		st.Blocked.Add(n)
		st.BlockedQueued.Add(n)
	default:
		st.PurgedURLs.Add(n)
	}
}

// empty drops v's URLs for why (handing them to the drop log) and marks
// it broken (nothing more of it is fetched), returning the URLs dropped.
func (s *scheduler) empty(v *visitState, why DropReason) int64 {
	f := s.f
	s.wb.withdraw(v)
	n := v.queued()
	s.addQueued(-n)
	s.queuedBytes -= int64(v.queue.bytes())
	s.virtualized -= v.onDisk
	if !s.drops.purged(v, why) && v.onDisk > 0 {
		if _, err := f.cfg.Virtualizer.Remove(v.id); err != nil {
			f.log.Error("frontier: virtualizer remove", "key", v.key, "err", err)
		}
	}
	v.queue, v.onDisk = pathQueue{}, 0
	v.setRetries(nil)
	v.phase, v.dropWhy = phaseBroken, why
	if v.inFlight == 0 {
		s.deactivate(v)
	}
	return n
}
