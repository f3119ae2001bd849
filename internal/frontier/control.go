package frontier

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// Cuts refuse queued URLs at dispatch: how a scope, filter or depth limit
// narrowed while the crawl runs reaches the URLs queued before the change
// (the agent refuses new URLs itself before they are queued). A URL they
// refuse is counted in stats.CutAtDispatch instead of fetched.
type Cuts struct {
	// MaxDepth, when positive, cuts a URL whose Meta has a greater Depth.
	MaxDepth int
	// Keep, when set, is asked about every page URL as it comes up for
	// dispatch; nil keeps everything. It is called on the scheduler
	// goroutine and must not change once given.
	Keep func(url string, m Meta) bool
}

// liveSettings are what the scheduler decides with. A value is never
// changed once published: Reconfigure publishes a new one.
type liveSettings struct {
	Settings
	Cuts
}

// check returns an error naming the first value out of range.
func (s *Settings) check(old *Settings) error {
	switch {
	case s.Assign != old.Assign:
		return fmt.Errorf("frontier: Assign cannot change while the crawl runs (the politeness keys of queued URLs were computed with %s)", old.Assign)
	case s.FrontSize != old.FrontSize:
		return errors.New("frontier: FrontSize cannot change while the crawl runs (the front grows by itself when fetchers wait)")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"HostDelay", s.HostDelay}, {"IPDelay", s.IPDelay}, {"RetryDelay", s.RetryDelay}, {"MaxDelay", s.MaxDelay}, {"CrawlDelayCap", s.CrawlDelayCap}} {
		switch {
		case d.v < 0:
			return fmt.Errorf("frontier: %s %v is negative", d.name, d.v)
		case d.v > MaxWait:
			return fmt.Errorf("frontier: %s %v is longer than %v", d.name, d.v, MaxWait)
		}
	}
	switch {
	case s.MaxDelay <= 0:
		return fmt.Errorf("frontier: MaxDelay %v is not positive", s.MaxDelay)
	case s.CrawlDelayCap <= 0:
		return fmt.Errorf("frontier: CrawlDelayCap %v is not positive", s.CrawlDelayCap)
	case s.RobotsExpiry <= 0:
		return fmt.Errorf("frontier: RobotsExpiry %v is not positive", s.RobotsExpiry)
	case s.DelayFactor < 0:
		return fmt.Errorf("frontier: DelayFactor %v is negative", s.DelayFactor)
	case s.ParallelPerKey < 1 || s.ParallelPerIP < 1:
		return fmt.Errorf("frontier: ParallelPerKey %d and ParallelPerIP %d must be at least 1", s.ParallelPerKey, s.ParallelPerIP)
	case s.MaxURLs < 0 || s.MaxURLsPerKey < 0 || s.MaxRetries < 0:
		return errors.New("frontier: MaxURLs, MaxURLsPerKey and MaxRetries must not be negative")
	case s.WorkbenchBytes <= 0:
		return fmt.Errorf("frontier: WorkbenchBytes %d is not positive", s.WorkbenchBytes)
	}
	return nil
}

// ErrNotRunning is returned by the calls that talk to the scheduler once
// Run has returned.
var ErrNotRunning = errors.New("frontier: the scheduler is not running")

// do runs fn on the scheduler goroutine, between two of its steps, and
// waits for it. Before Run starts it waits for it; after Run has returned,
// or when ctx ends first, it returns an error and fn may not have run.
func (f *Frontier) do(ctx context.Context, fn func(s *scheduler)) error {
	done := make(chan struct{})
	select {
	case f.control <- controlReq{fn: fn, done: done}:
	case <-f.runDone:
		return ErrNotRunning
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		// fn runs anyway; the caller no longer waits for it.
		return ctx.Err()
	}
}

type controlReq struct {
	fn   func(s *scheduler)
	done chan struct{}
}

// Settings returns the settings in force.
func (f *Frontier) Settings() Settings { return f.live.Load().Settings }

// Cuts returns the cuts in force.
func (f *Frontier) Cuts() Cuts { return f.live.Load().Cuts }

// Reconfigure replaces the settings and cuts in force, all at once, on the
// scheduler goroutine: after it returns nil every decision of the
// scheduler uses the new values. It returns an error, and changes nothing,
// when a value is out of range, Assign or FrontSize would change, or Run
// is not running.
//
// A change applies from the next decision it enters. A raised HostDelay,
// IPDelay or CrawlDelayCap holds for keys and addresses already waiting
// (see reconfigure); a raised DelayFactor or MaxDelay applies from each
// key's next response; a lowered HostDelay, IPDelay, CrawlDelayCap,
// MaxDelay or RetryDelay shortens the waits in progress that it set, to
// the end of the last exchange plus the new delay. RobotsExpiry counts
// from each robots.txt's fetch, so a lowered one expires the rules fetched
// before the change as well.
// Narrowing a limit (MaxURLs, MaxURLsPerKey, the cuts) cuts queued URLs as
// they come up for dispatch, counted in stats.CutAtDispatch; widening one
// affects the URLs found afterwards (and, for MaxURLs, lets dispatch go
// on). A lower WorkbenchBytes sends new URLs to the virtualizer sooner; the
// URLs already in RAM stay there.
func (f *Frontier) Reconfigure(ctx context.Context, set Settings, cuts Cuts) error {
	if err := set.check(&f.live.Load().Settings); err != nil {
		return err
	}
	return f.do(ctx, func(s *scheduler) { s.reconfigure(&liveSettings{set, cuts}) })
}

// ReconfigureBeforeRun is Reconfigure for a frontier whose Run has not
// started (an agent of a cluster taking the crawl's settings at hello): the
// change is made on the caller's goroutine and Run starts under it. The
// caller makes sure Run does not start until it returns.
func (f *Frontier) ReconfigureBeforeRun(set Settings, cuts Cuts) error {
	if err := set.check(&f.live.Load().Settings); err != nil {
		return err
	}
	f.sched.reconfigure(&liveSettings{set, cuts})
	return nil
}

// reconfigure installs new settings in the scheduler. Once it has run, no
// task decided under the old settings begins: the one waiting for a
// fetcher and those in Todo's buffer are taken back (their URLs dispatched
// again, or cut, under the new ones), and a task a fetcher already holds
// is Recalled. A raised host or IP delay, or Crawl-delay cap, holds for
// keys and addresses already waiting: their next allowed time moves by the
// increase, so that it is at least the end of their last exchange plus the
// new delay. A lowered one shortens the waits it set (lowerWaits).
func (s *scheduler) reconfigure(set *liveSettings) {
	old := s.set
	s.set = set
	s.f.live.Store(set)
	s.f.gen.Add(1)
	s.takeBack()
	if set.HostDelay > old.HostDelay || set.CrawlDelayCap > old.CrawlDelayCap {
		for _, v := range s.states {
			d, why := set.HostDelay, DelayHost
			if cd := s.keyCrawlDelay(v); cd > d {
				d, why = cd, DelayCrawlDelay
			}
			if v.delay < d && v.nextFetch > 0 {
				v.nextFetch = later(v.nextFetch, d-v.delay)
				v.delay, v.delayWhy = d, why
				s.wb.offer(v)
			}
		}
		s.raiseIdleDelays(set)
	}
	if d := set.IPDelay - old.IPDelay; d > 0 {
		for _, e := range s.wb.byAddr {
			switch {
			case e.held: // stays held; the wait after the hold grows
				if e.heldNext > 0 {
					e.heldNext = later(e.heldNext, d)
				}
			case e.nextFetch > 0:
				e.nextFetch = later(e.nextFetch, d)
				s.wb.fix(e)
			}
		}
	}
	s.lowerWaits(&old.Settings)
	s.dist.maxFront = max(int(set.WorkbenchBytes/1024), s.f.cfg.FrontSize)
	s.dist.front = min(s.dist.front, s.dist.maxFront)
	if set.MaxURLs == 0 || set.MaxURLs > s.dispatched {
		s.limitHit = false
		s.f.atLimit.Store(false)
	}
	if set.ParallelPerKey != old.ParallelPerKey || set.ParallelPerIP != old.ParallelPerIP {
		s.wb.parKey, s.wb.parIP = set.ParallelPerKey, set.ParallelPerIP
		for _, v := range s.states {
			s.wb.offer(v)
		}
		for _, e := range s.wb.byAddr {
			s.wb.fix(e)
		}
	}
}

// lowerWaits shortens the waits set under old that the settings in force
// make shorter: a key's next allowed time moves back by the decrease of its
// delay (see delayUnder), an address's by the decrease of IPDelay, so that
// each is the end of its last exchange plus the new delay. An address's
// wait stays at least the base delays from the frontier's start (see
// startWaits) and a release's bound on it (handoff.go); a held address
// keeps its hold, the wait it will have after it shortened.
func (s *scheduler) lowerWaits(old *Settings) {
	set := s.set
	if set.HostDelay >= old.HostDelay && set.CrawlDelayCap >= old.CrawlDelayCap &&
		set.MaxDelay >= old.MaxDelay && set.RetryDelay >= old.RetryDelay && set.IPDelay >= old.IPDelay {
		return
	}
	now := s.f.now()
	for _, v := range s.states {
		var crawl time.Duration
		if v.delayWhy == DelayCrawlDelay { // the rules may be read from the robots store
			crawl = s.keyCrawlDelay(v)
		}
		d := delayUnder(set, v.delay, v.delayWhy, crawl)
		if d < v.delay && v.nextFetch > 0 {
			v.nextFetch = shorter(v.nextFetch, v.delay-d, now, d)
			v.delay = d
			s.wb.offer(v)
		}
	}
	s.lowerIdleDelays(now)
	dec := old.IPDelay - set.IPDelay
	if dec <= 0 {
		return
	}
	floor := int64(max(set.HostDelay, set.IPDelay))
	for _, e := range s.wb.byAddr {
		// Not below the start's base delays, nor below a release's bound
		// on the address (handoff.go), which carries waits of keys too.
		bound := max(floor, s.f.holds.earliest(e.addr))
		switch {
		case e.held:
			if e.heldNext > 0 {
				e.heldNext = max(shorter(e.heldNext, dec, now, set.IPDelay), min(e.heldNext, bound))
			}
		case e.nextFetch > 0:
			e.nextFetch = max(shorter(e.nextFetch, dec, now, set.IPDelay), min(e.nextFetch, bound))
			s.wb.fix(e)
		}
	}
}

// delayUnder is what a key's delay d, set for why, becomes under set: the
// host delay, the Crawl-delay (crawl, already capped; 0: unknown) or the
// retry delay as they now are, and Retry-After or the adaptive delay
// within MaxDelay; never below the host delay. The robots.txt backoff is
// kept.
func delayUnder(set *liveSettings, d time.Duration, why DelayReason, crawl time.Duration) time.Duration {
	switch why {
	case DelayHost:
		d = set.HostDelay
	case DelayCrawlDelay:
		if crawl > 0 {
			d = crawl
		} else { // the rules are not at hand: the cap still bounds it
			d = min(d, set.CrawlDelayCap)
		}
	case DelayAdaptive, DelayRetryAfter:
		d = min(d, set.MaxDelay)
	case DelayRetry:
		d = min(d, set.RetryDelay)
	default:
		return d
	}
	return max(d, set.HostDelay)
}

// shorter moves a next allowed time back by dec. A time the clock could
// not hold (saturated by later) no longer tells when the last exchange
// ended: it becomes now plus the new delay, which that end precedes.
func shorter(next int64, dec time.Duration, now int64, d time.Duration) int64 {
	if next == math.MaxInt64 {
		return later(now, d)
	}
	return later(next, -dec)
}

// Pause stops dispatch: once it returns, no fetch starts until Resume
// (tasks handed out but not yet begun come back as abandoned, and a
// fetcher that checks Paused hands back what it receives meanwhile);
// fetches in flight finish and are released as usual. Checkpoints,
// inspection and the distributor go on. It returns an error when Run is
// not running or ctx ends first.
func (f *Frontier) Pause(ctx context.Context) error {
	f.paused.Store(true)
	return f.do(ctx, func(s *scheduler) { s.pause() })
}

// Resume ends a Pause.
func (f *Frontier) Resume(ctx context.Context) error {
	f.paused.Store(false)
	return f.do(ctx, func(s *scheduler) { s.paused = false; f.paused.Store(false) })
}

// Paused reports whether dispatch is paused.
func (f *Frontier) Paused() bool { return f.paused.Load() }

// Recalled reports whether a fetcher must hand t back as Abandoned instead
// of beginning it: dispatch is paused, or the settings changed
// (Reconfigure) since t was dispatched. Fetchers check it after they take
// note of the time the fetch begins, so that a fetch begun after
// Reconfigure returned was decided under the new settings.
func (f *Frontier) Recalled(t *Task) bool { return f.paused.Load() || t.gen != f.gen.Load() }

// pause takes back the tasks no fetcher has begun.
func (s *scheduler) pause() {
	s.paused = true
	s.f.paused.Store(true)
	s.takeBack()
}

// takeBack releases as abandoned the task waiting for a fetcher and those
// in Todo's buffer, which no fetcher has begun.
func (s *scheduler) takeBack() {
	if s.pending != nil {
		s.release(Outcome{Task: s.pending, Result: Abandoned, End: s.f.clock.Now()})
		s.pending = nil
	}
	for {
		select {
		case t := <-s.f.todo:
			s.release(Outcome{Task: t, Result: Abandoned, End: s.f.clock.Now()})
			continue
		default:
		}
		return
	}
}
