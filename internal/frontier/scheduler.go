package frontier

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"
)

// scheduler is the state owned by Run's goroutine: the visit states, the
// workbench, the DNS backlog, and the accounting that decides when the
// crawl is over.
type scheduler struct {
	f  *Frontier
	wb workbench

	states  map[string]*visitState
	entries map[netip.Addr]*ipEntry

	dnsReq      chan *visitState
	dnsRes      chan dnsResult
	dnsBacklog  []*visitState
	dnsInFlight int
	dnsRetry    []*visitState // failed resolutions waiting for their retry time
	dnsRetryAt  []int64

	pending     *Task
	queuedURLs  int64
	queuedBytes int64
	dispatched  int64
	inFlight    int
	limitHit    bool

	flushing  bool
	flushDone chan flushResult
	lastFlush int64

	popBuf []byte
}

type dnsResult struct {
	vs   *visitState
	addr netip.Addr
	err  error
}

type flushResult struct {
	upTo int64
	err  error
}

// errStopped reports a stop before the crawl was complete.
var errStopped = errors.New("frontier: stopped")

func newScheduler(f *Frontier) *scheduler {
	return &scheduler{
		f:         f,
		wb:        workbench{parKey: f.cfg.ParallelPerKey, parIP: f.cfg.ParallelPerIP},
		states:    make(map[string]*visitState),
		entries:   make(map[netip.Addr]*ipEntry),
		dnsReq:    make(chan *visitState, 256),
		dnsRes:    make(chan dnsResult, 256),
		flushDone: make(chan flushResult, 1),
	}
}

// Run is the scheduler: it fills visit states from the ready queue, resolves
// their hosts, hands due tasks to fetchers and releases them when they come
// back. It returns nil when the crawl is complete (nothing left to fetch, or
// MaxURLs dispatched and done), ctx's error after a stop (in-flight tasks
// have come back), or the error that made the crawl impossible to go on
// (a sieve failure). Todo is closed when Run returns.
func (f *Frontier) Run(ctx context.Context) error {
	s := f.sched
	defer close(f.todo)
	dnsCtx, stopDNS := context.WithCancel(context.Background())
	defer stopDNS()
	for i := 0; i < f.cfg.DNSWorkers; i++ {
		go s.dnsWorker(dnsCtx)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	stopping := false
	var stopDeadline <-chan time.Time
	var runErr error

	for {
		now := f.now()
		if !stopping {
			if err := s.fill(); err != nil {
				runErr = err
				stopping = true
			}
			s.retryDNS(now)
			if s.pending == nil {
				s.pending = s.next(now)
			}
			if p := f.sieveErr.Load(); p != nil && runErr == nil {
				runErr = *p
				stopping = true
			}
		}
		if stopping {
			if s.pending != nil {
				s.release(Outcome{Task: s.pending, Result: Abandoned, End: time.Now()})
				s.pending = nil
			}
			if s.inFlight == 0 && !s.flushing {
				s.updateGauges()
				if runErr != nil {
					return runErr
				}
				return ctx.Err()
			}
		} else if s.idle() {
			if f.sieveIn.Load() > f.sieveFlushed.Load() {
				if !s.flushing {
					s.startFlush(now)
				}
			} else if !s.flushing {
				s.updateGauges()
				return nil
			}
		} else if !s.flushing && f.cfg.Ready.Len() == 0 && f.sieveIn.Load() > f.sieveFlushed.Load() &&
			now-s.lastFlush >= int64(f.cfg.MinFlushGap) {
			s.startFlush(now)
		}

		var todo chan<- *Task
		if s.pending != nil {
			todo = f.todo
		}
		var dnsOut chan<- *visitState
		var nextDNS *visitState
		if len(s.dnsBacklog) > 0 && !stopping {
			dnsOut, nextDNS = s.dnsReq, s.dnsBacklog[0]
		}
		var timerC <-chan time.Time
		if wake, ok := s.nextWake(); ok && s.pending == nil && !stopping {
			d := time.Duration(wake - f.now())
			if d < 0 {
				d = 0
			}
			timer.Reset(d)
			timerC = timer.C
		}

		select {
		case todo <- s.pending:
			s.pending = nil
		case o := <-f.done:
			s.release(o)
			// Take whatever else came back without going round the loop.
			for n := 0; n < 256; n++ {
				select {
				case o := <-f.done:
					s.release(o)
					continue
				default:
				}
				break
			}
		case dnsOut <- nextDNS:
			s.dnsBacklog[0] = nil
			s.dnsBacklog = s.dnsBacklog[1:]
			s.dnsInFlight++
		case r := <-s.dnsRes:
			s.dnsInFlight--
			s.resolved(r)
		case r := <-s.flushDone:
			s.flushing = false
			f.stats.SieveFlushes.Add(1)
			if r.err != nil {
				if runErr == nil {
					runErr = fmt.Errorf("frontier: sieve flush: %w", r.err)
				}
				stopping = true
			} else if r.upTo > f.sieveFlushed.Load() {
				f.sieveFlushed.Store(r.upTo)
			}
		case <-f.wake:
		case <-timerC:
		case <-tick.C:
			s.updateGauges()
		case <-ctx.Done():
			if !stopping {
				stopping = true
				stopDeadline = time.After(time.Minute)
			}
		case <-stopDeadline:
			f.log.Warn("frontier: tasks still in flight at stop; their URLs are not saved", "in_flight", s.inFlight)
			return errors.Join(runErr, ctx.Err(), errStopped)
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// idle reports whether nothing is left in the workbench, in flight, or
// outstanding.
func (s *scheduler) idle() bool {
	f := s.f
	if s.inFlight > 0 || f.outstanding.Load() > 0 || s.pending != nil {
		return false
	}
	if s.limitHit {
		return true
	}
	return s.queuedURLs == 0 && len(s.dnsBacklog) == 0 && s.dnsInFlight == 0 &&
		len(s.dnsRetry) == 0 && f.cfg.Ready.Len() == 0
}

// nextWake is when the earliest workbench entry (or DNS retry) becomes due.
func (s *scheduler) nextWake() (int64, bool) {
	var t int64
	ok := false
	if len(s.wb.entries) > 0 && !s.limitHit {
		t, ok = s.wb.entries[0].readyAt(), true
	}
	for _, at := range s.dnsRetryAt {
		if !ok || at < t {
			t, ok = at, true
		}
	}
	return t, ok
}

func (s *scheduler) startFlush(now int64) {
	f := s.f
	s.flushing = true
	s.lastFlush = now
	upTo := f.sieveIn.Load()
	go func() {
		err := f.cfg.Sieve.Flush()
		s.flushDone <- flushResult{upTo: upTo, err: err}
	}()
}

// fill is the distributor: it moves ready URLs into their visit states
// while the workbench is under its byte budget, creating visit states (and
// DNS requests) for new keys.
func (s *scheduler) fill() error {
	f := s.f
	for n := 0; n < 4096 && s.queuedBytes < f.cfg.WorkbenchBytes; n++ {
		rec, ok, err := f.cfg.Ready.Pop(s.popBuf[:0])
		if err != nil {
			return fmt.Errorf("frontier: ready queue pop: %w", err)
		}
		if !ok {
			return nil
		}
		s.popBuf = rec
		f.stats.Ready.Add(-1)
		sa := schemeAuthorityOf(rec)
		pq := rec[len(sa):]
		v := s.states[string(sa)]
		if v == nil {
			v = s.newVisitState(string(sa))
		}
		if v.broken {
			f.stats.PurgedURLs.Add(1)
			continue
		}
		before := v.queue.bytes()
		v.queue.push(pq)
		s.queuedBytes += int64(v.queue.bytes() - before)
		s.queuedURLs++
		if v.heapIndex < 0 && v.entry != nil && v.inFlight < s.wb.parKey {
			s.wb.offer(v)
		}
	}
	return nil
}

func (s *scheduler) newVisitState(sa string) *visitState {
	v := &visitState{key: sa, schemeAuthority: sa, host: hostOf(sa), heapIndex: -1, resolving: true}
	s.states[sa] = v
	s.dnsBacklog = append(s.dnsBacklog, v)
	s.f.stats.VisitStates.Store(int64(len(s.states)))
	return v
}

// next returns a task that may start now, or nil.
func (s *scheduler) next(now int64) *Task {
	f := s.f
	for len(s.wb.entries) > 0 && !s.limitHit {
		e := s.wb.entries[0]
		if e.readyAt() > now {
			return nil
		}
		v := e.states[0]
		if v.robots != nil && now >= v.robotsExpires {
			v.robots = nil
		}
		t := &Task{SchemeAuthority: v.schemeAuthority, Addr: e.addr, vs: v}
		if v.robots == nil {
			if v.robotsInFlight {
				// Only with ParallelPerKey > 1: wait for robots.txt.
				s.wb.withdraw(v)
				continue
			}
			t.PathQuery, t.Robots = "/robots.txt", true
			v.robotsInFlight = true
		} else {
			pq, attempt, ok := s.nextURL(v)
			if !ok {
				s.wb.offer(v)
				continue
			}
			if f.cfg.MaxURLs > 0 && s.dispatched >= f.cfg.MaxURLs {
				s.putBack(v, pq, attempt)
				s.limitHit = true
				return nil
			}
			s.dispatched++
			t.PathQuery, t.Attempt = pq, attempt
		}
		v.inFlight++
		e.inFlight++
		s.inFlight++
		f.stats.InFlight.Add(1)
		s.wb.offer(v)
		return t
	}
	return nil
}

// nextURL takes the next URL of v that robots.txt allows: retries first,
// then the queue. Disallowed URLs are counted and dropped.
func (s *scheduler) nextURL(v *visitState) (string, int, bool) {
	if len(v.retries) > 0 {
		r := v.retries[0]
		v.retries = v.retries[1:]
		s.queuedURLs--
		return r.pathQuery, r.attempt, true
	}
	for v.queue.len() > 0 {
		before := v.queue.bytes()
		pq, _ := v.queue.pop()
		s.queuedBytes += int64(v.queue.bytes() - before)
		s.queuedURLs--
		if v.robots.Allowed(pq) {
			return pq, 0, true
		}
		s.f.stats.RobotsDenied.Add(1)
	}
	return "", 0, false
}

// putBack returns a URL to the head of v's queue.
func (s *scheduler) putBack(v *visitState, pq string, attempt int) {
	v.retries = append([]retry{{pathQuery: pq, attempt: attempt}}, v.retries...)
	s.queuedURLs++
}

// release takes a task back from a fetcher and computes the next allowed
// times of its visit state and workbench entry.
func (s *scheduler) release(o Outcome) {
	f := s.f
	t := o.Task
	v := t.vs
	e := v.entry
	v.inFlight--
	e.inFlight--
	s.inFlight--
	f.stats.InFlight.Add(-1)
	end := f.now()
	if !o.End.IsZero() {
		end = f.at(o.End)
	}
	delay := s.keyDelay(v, o)

	if t.Robots {
		v.robotsInFlight = false
		switch {
		case o.Result == Abandoned:
		case o.Result == Fetched && o.Robots != nil:
			v.robots = o.Robots
			v.robotsExpires = end + int64(f.cfg.RobotsExpiry)
			v.robotsFails = 0
			if cd := o.Robots.CrawlDelay(); cd > 0 {
				delay = max(delay, min(cd, f.cfg.CrawlDelayCap))
			}
		default:
			// robots.txt unavailable (5xx, unreachable): disallow for now,
			// retry later with backoff, purge when it keeps failing.
			v.robotsFails++
			if v.robotsFails > f.cfg.MaxRetries {
				s.purge(v)
				return
			}
			delay = max(delay, f.cfg.RetryDelay<<min(v.robotsFails, 8))
		}
	} else {
		switch o.Result {
		case Fetched:
			v.failures = 0
		case RetryLater:
			if t.Attempt < f.cfg.MaxRetries {
				v.retries = append(v.retries, retry{pathQuery: t.PathQuery, attempt: t.Attempt + 1})
				s.queuedURLs++
				f.stats.Retries.Add(1)
				delay = max(delay, f.cfg.RetryDelay)
				break
			}
			fallthrough
		case Failed:
			v.failures++
			if v.failures >= f.cfg.MaxFailures {
				s.purge(v)
				e.nextFetch = max(e.nextFetch, end+int64(f.cfg.IPDelay))
				s.wb.fix(e)
				return
			}
		case Abandoned:
			s.putBack(v, t.PathQuery, t.Attempt)
			s.dispatched--
		}
	}
	v.nextFetch = max(v.nextFetch, end+int64(delay))
	e.nextFetch = max(e.nextFetch, end+int64(f.cfg.IPDelay))
	s.wb.offer(v)
	s.wb.fix(e)
}

// keyDelay is the gap before the next request to v: the host delay, raised
// by the adaptive factor, robots.txt Crawl-delay and Retry-After.
func (s *scheduler) keyDelay(v *visitState, o Outcome) time.Duration {
	c := &s.f.cfg
	d := c.HostDelay
	if c.DelayFactor > 0 && o.Duration > 0 {
		a := time.Duration(c.DelayFactor * float64(o.Duration))
		d = max(d, min(a, c.MaxDelay))
	}
	if v.robots != nil {
		if cd := v.robots.CrawlDelay(); cd > d {
			d = min(cd, c.CrawlDelayCap)
			d = max(d, c.HostDelay)
		}
	}
	if o.RetryAfter > d {
		d = min(o.RetryAfter, c.MaxDelay)
	}
	return d
}

// purge drops a broken visit state's URLs (BUbiNG's brokenVisitStates).
func (s *scheduler) purge(v *visitState) {
	f := s.f
	s.wb.withdraw(v)
	n := int64(v.queue.len() + len(v.retries))
	s.queuedURLs -= n
	s.queuedBytes -= int64(v.queue.bytes())
	v.queue = pathQueue{}
	v.retries = nil
	v.broken = true
	f.stats.BrokenKeys.Add(1)
	f.stats.PurgedURLs.Add(n)
	f.log.Info("frontier: visit state purged as broken", "key", v.key, "urls", n)
}

// dnsWorker resolves hosts for new visit states.
func (s *scheduler) dnsWorker(ctx context.Context) {
	f := s.f
	for {
		select {
		case <-ctx.Done():
			return
		case v := <-s.dnsReq:
			r := dnsResult{vs: v}
			addrs, err := f.cfg.Resolver.Lookup(ctx, v.host)
			switch {
			case err != nil:
				r.err = err
			case len(addrs) == 0:
				r.err = fmt.Errorf("frontier: resolve %s: no addresses", v.host)
			default:
				r.addr = pickAddr(addrs)
				if f.cfg.Guard != nil {
					if gerr := f.cfg.Guard(r.addr); gerr != nil {
						r.err = &refusedError{gerr}
					}
				}
			}
			select {
			case s.dnsRes <- r:
			case <-ctx.Done():
				return
			}
		}
	}
}

type refusedError struct{ err error }

func (e *refusedError) Error() string { return e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// pickAddr prefers the first IPv4 address.
func pickAddr(addrs []netip.Addr) netip.Addr {
	for _, a := range addrs {
		if a.Is4() || a.Is4In6() {
			return a.Unmap()
		}
	}
	return addrs[0]
}

// resolved attaches a visit state to the workbench entry of its address, or
// retries / purges it when resolution failed.
func (s *scheduler) resolved(r dnsResult) {
	f := s.f
	v := r.vs
	v.resolving = false
	if r.err != nil {
		var refused *refusedError
		if errors.As(r.err, &refused) {
			n := int64(v.queue.len() + len(v.retries))
			f.stats.AddressRefused.Add(n)
			f.log.Info("frontier: address refused", "key", v.key, "err", r.err)
			s.purge(v)
			return
		}
		v.dnsFails++
		if v.dnsFails > f.cfg.DNSRetries || isPermanentDNS(r.err) {
			f.stats.DNSFailures.Add(1)
			f.log.Info("frontier: name did not resolve", "key", v.key, "err", r.err)
			s.purge(v)
			return
		}
		s.dnsRetry = append(s.dnsRetry, v)
		s.dnsRetryAt = append(s.dnsRetryAt, f.now()+int64(f.cfg.RetryDelay<<v.dnsFails))
		return
	}
	e := s.entries[r.addr]
	if e == nil {
		e = &ipEntry{addr: r.addr, heapIndex: -1}
		s.entries[r.addr] = e
		f.stats.IPEntries.Store(int64(len(s.entries)))
	}
	e.members++
	v.entry = e
	s.wb.offer(v)
}

// PermanentDNS marks resolver errors that retrying cannot fix (a name that
// does not exist, a special-use name absent from the hosts file).
type PermanentDNS interface{ Permanent() bool }

func isPermanentDNS(err error) bool {
	var p PermanentDNS
	return errors.As(err, &p) && p.Permanent()
}

// retryDNS moves failed resolutions whose time has come back to the backlog.
func (s *scheduler) retryDNS(now int64) {
	for i := 0; i < len(s.dnsRetry); {
		if s.dnsRetryAt[i] <= now {
			s.dnsBacklog = append(s.dnsBacklog, s.dnsRetry[i])
			last := len(s.dnsRetry) - 1
			s.dnsRetry[i], s.dnsRetryAt[i] = s.dnsRetry[last], s.dnsRetryAt[last]
			s.dnsRetry, s.dnsRetryAt = s.dnsRetry[:last], s.dnsRetryAt[:last]
			continue
		}
		i++
	}
}

func (s *scheduler) updateGauges() {
	st := s.f.stats
	st.Queued.Store(s.queuedURLs)
	st.QueuedBytes.Store(s.queuedBytes)
	st.VisitStates.Store(int64(len(s.states)))
	st.IPEntries.Store(int64(len(s.entries)))
	active := 0
	for _, e := range s.wb.entries {
		active += len(e.states)
	}
	st.ActiveKeys.Store(int64(active + s.inFlight))
}

// Close saves the frontier's queued URLs and closes the sieve. Call it after
// Run has returned and after every producer of Enqueue has stopped. URLs held
// by visit states go back to the ready queue (the sieve has already marked
// them seen), so that a crawl restarted on the same state resumes them.
func (f *Frontier) Close() error {
	s := f.sched
	var errs []error
	var buf []byte
	f.readyMu.Lock()
	saved := 0
	for _, v := range s.states {
		if v.broken {
			continue
		}
		for _, r := range v.retries {
			buf = append(append(buf[:0], v.schemeAuthority...), r.pathQuery...)
			if err := f.cfg.Ready.Push(buf); err != nil {
				errs = append(errs, err)
				break
			}
			saved++
		}
		v.queue.each(func(pq []byte) {
			buf = append(append(buf[:0], v.schemeAuthority...), pq...)
			if err := f.cfg.Ready.Push(buf); err != nil {
				errs = append(errs, err)
			}
			saved++
		})
		v.queue, v.retries = pathQueue{}, nil
	}
	f.readyMu.Unlock()
	s.queuedURLs, s.queuedBytes = 0, 0
	if saved > 0 {
		f.log.Info("frontier: queued URLs saved to the ready queue", "urls", saved)
	}
	if f.cfg.Sieve != nil {
		if err := f.cfg.Sieve.Close(); err != nil {
			errs = append(errs, fmt.Errorf("frontier: close sieve: %w", err))
		}
	}
	return errors.Join(errs...)
}

// SaveCounts writes the per-key URL counts (for resuming a crawl).
func (f *Frontier) SaveCounts(w io.Writer) error { return f.counts.writeTo(w) }

// LoadCounts reads counts written by SaveCounts; call it before Run.
func (f *Frontier) LoadCounts(r io.Reader) error { return f.counts.readFrom(r) }
