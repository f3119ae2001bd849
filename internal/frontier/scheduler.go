package frontier

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"net/netip"
	"time"
)

// The scheduler is Run's goroutine and the state it alone owns: the visit
// states and, as stages of their own, the distributor (ready queue → visit
// states), the DNS stage, the robots table and the workbench. It needs no
// locks.
//
// Invariants:
//   - queuedURLs is the number of URLs held by visit states (RAM, retries,
//     disk) plus those parked for DNS; it changes only through addQueued
//     (checkQueued verifies it);
//   - every task handed out is in flying until released, and inFlight is
//     its size;
//   - the crawl is over (idle) only when nothing is queued, held, parked,
//     resolving, in the ready queue, in flight, pending or outstanding.
type scheduler struct {
	f      *Frontier
	set    *liveSettings // in force (replaced whole by reconfigure)
	assign Assign
	wb     workbench
	dist   distributor
	dns    dnsStage
	robots robotsTable
	drops  dropLog
	states map[string]*visitState
	// idleKeys: the keys that settled idle, by idleHash (idlekey.go)
	idleKeys map[uint64]idleKey
	idleSeed maphash.Seed
	nextID   uint64
	// restored: saved hand-over state of keys with no visit state yet
	// (handoverkeys.go)
	restored map[string]HandoverKey

	pending     *Task
	flying      map[*Task]struct{} // tasks handed out and not yet back
	paused      bool
	queuedURLs  int64            // see addQueued
	queuedBytes int64            // RAM bytes of visit-state queues
	virtualized int64            // URLs held on disk by the virtualizer
	dispatched  int64            // page fetches counted against MaxURLs, over the runs (see Config.Stats)
	pagesByKey  map[string]int64 // page fetches dispatched per scheme+authority (policies other than authority)
	inFlight    int
	limitHit    bool
	err         error

	flushing  bool
	flushDone chan flushResult
	lastFlush int64
	flushWait int64 // the fetchers' wait (Stats.FetcherWaitNano) when the last flush began
}

type flushResult struct {
	upTo int64
	err  error
}

// errStopped reports a stop that could not wait for every task to return.
var errStopped = errors.New("frontier: stopped with tasks in flight")

func newScheduler(f *Frontier) *scheduler {
	c := &f.cfg
	s := &scheduler{
		f:          f,
		set:        f.live.Load(),
		wb:         workbench{parKey: c.ParallelPerKey, parIP: c.ParallelPerIP, byAddr: make(map[netip.Addr]*ipEntry)},
		assign:     c.Assign,
		dns:        newDNSStage(c.HostCache),
		robots:     newRobotsTable(f),
		drops:      dropLog{fn: c.Dropped, virt: c.Virtualizer, stats: c.Stats, log: c.Logger},
		states:     make(map[string]*visitState),
		idleKeys:   make(map[uint64]idleKey),
		idleSeed:   maphash.MakeSeed(),
		flushDone:  make(chan flushResult, 1),
		flying:     make(map[*Task]struct{}),
		pagesByKey: make(map[string]int64),
		dispatched: c.Stats.PagesDispatched.Load(),
		flushWait:  c.Stats.FetcherWaitNano.Load(),
	}
	// The front never grows beyond what the workbench can hold: a visit
	// state in RAM costs about 300 bytes plus its first URLs.
	s.dist.front = c.FrontSize
	s.dist.maxFront = max(int(c.WorkbenchBytes/1024), s.dist.front)
	return s
}

// addQueued is the one place where the count of queued URLs changes.
func (s *scheduler) addQueued(n int64) { s.queuedURLs += n }

// checkQueued returns an error when queuedURLs is not the number of URLs
// the visit states and the parked lists hold (for tests).
func (s *scheduler) checkQueued() error {
	var n int64
	for _, v := range s.states {
		n += v.queued()
	}
	for _, h := range s.dns.hosts {
		n += int64(len(h.parked()))
	}
	if n != s.queuedURLs {
		return fmt.Errorf("frontier: %d URLs queued, counted %d", n, s.queuedURLs)
	}
	return s.checkHeaps()
}

// checkHeaps returns an error when a visit state or an entry is not where
// the workbench's invariants put it (for tests).
func (s *scheduler) checkHeaps() error {
	for _, v := range s.states {
		want := v.entry != nil && v.phase == phaseReady && v.hasWork() && int(v.inFlight) < s.wb.parKey
		if (v.heapIndex >= 0) != want {
			return fmt.Errorf("frontier: visit state %s (phase %d, %d queued, %d in flight) in its entry's heap: %v", v.key, v.phase, v.queued(), v.inFlight, v.heapIndex >= 0)
		}
	}
	for a, e := range s.wb.byAddr {
		want := len(e.states) > 0 && e.inFlight < s.wb.parIP
		if (e.heapIndex >= 0) != want {
			return fmt.Errorf("frontier: entry %s (%d states, %d in flight) in the workbench: %v", a, len(e.states), e.inFlight, e.heapIndex >= 0)
		}
	}
	return nil
}

// runLoop is the state of Run's loop besides the scheduler's.
type runLoop struct {
	ctx          context.Context
	ctxDone      <-chan struct{} // nil once seen, so that a stop does not spin the loop
	timer, tick  Timer
	stopping     bool
	stopDeadline Timer // set when a stop begins
}

// Run is the scheduler: it fills visit states from the ready queue, resolves
// their hosts, hands due tasks to fetchers and releases them when they come
// back. It returns nil when the crawl is complete (nothing left to fetch, or
// MaxURLs dispatched and done), ctx's error after a stop (once every task in
// flight has come back), or the error that made the crawl impossible to go on
// (a sieve or disk failure). Todo is closed when Run returns.
func (f *Frontier) Run(ctx context.Context) error {
	s := f.sched
	defer close(f.todo)
	f.running.Store(true)
	defer close(f.runDone)
	dnsCtx, stopDNS := context.WithCancel(context.Background())
	defer stopDNS()
	for i := 0; i < f.cfg.DNSWorkers; i++ {
		go s.dns.worker(dnsCtx, f.cfg.Resolver, f.cfg.Guard)
	}
	s.drops.start()
	defer s.drops.stop()
	l := &runLoop{ctx: ctx, ctxDone: ctx.Done(), timer: f.clock.NewTimer(time.Hour), tick: f.clock.NewTimer(tickEvery)}
	defer l.timer.Stop()
	defer l.tick.Stop()
	for {
		now := f.now()
		more := s.step(now, l)
		if done, err := s.finished(now, l); done {
			return err
		}
		if err := s.wait(l, more); err != nil {
			return err
		}
	}
}

// tickEvery is how often the scheduler adjusts the front and the gauges.
const tickEvery = 100 * time.Millisecond

// stopGrace is how long a stop waits for the tasks in flight to return.
const stopGrace = time.Minute

// step does the scheduler's own work: fill visit states, retry due DNS
// resolutions, prepare the next task. It reports whether the distributor
// has more to move at once.
func (s *scheduler) step(now int64, l *runLoop) (more bool) {
	if s.f.idle.Load() && !s.idle() {
		s.f.idle.Store(false)
	}
	if l.stopping {
		return false
	}
	more = s.fill()
	s.dns.due(now)
	if s.pending == nil && !s.paused {
		s.pending = s.next(now)
		// next may have emptied visit states, making room in the front
		// for the record the distributor holds back.
		more = more || (s.dist.held != nil && s.dist.active < s.dist.front)
	}
	if p := s.f.sieveErr.Load(); p != nil && s.err == nil {
		s.err = *p
	}
	if s.err != nil {
		l.stopping = true
	}
	s.drops.flush()
	s.robots.trim(now)
	if n := s.dns.trim(now); n > 0 {
		s.f.stats.HostsForgotten.Add(int64(n))
	}
	return more
}

// finished reports whether Run must return, and with what: a stop once
// nothing is in flight, or a crawl with nothing left (after a last flush of
// the sieve). It starts the flushes the crawl needs to go on.
func (s *scheduler) finished(now int64, l *runLoop) (bool, error) {
	f := s.f
	switch {
	case l.stopping:
		if s.pending != nil {
			s.release(Outcome{Task: s.pending, Result: Abandoned, End: f.clock.Now()})
			s.pending = nil
		}
		if s.inFlight == 0 && !s.flushing {
			s.updateGauges()
			if s.err != nil {
				return true, s.err
			}
			return true, l.ctx.Err()
		}
	case s.idle():
		if f.sieveIn.Load() > f.sieveFlushed.Load() {
			if !s.flushing {
				s.startFlush(now)
			}
		} else if !s.flushing {
			s.updateGauges()
			if f.cfg.Until == nil {
				return true, nil
			}
			// Wait for more work or for the crawl's end (see Until).
			if !f.idle.Load() || f.busy.Load() {
				f.busy.Store(false)
				f.idle.Store(true)
			}
			f.settled.Notify()
			select {
			case <-f.cfg.Until:
				return true, nil
			default:
			}
		}
	case !s.flushing && s.dist.held == nil && f.cfg.Ready.Len() == 0 &&
		now-s.lastFlush >= int64(f.cfg.MinFlushGap) && s.flushWanted(now):
		s.startFlush(now)
	}
	return false, nil
}

// wait blocks until something happens (a fetcher takes the pending task or
// hands one back, DNS, a flush, a checkpoint or control request, a timer,
// a stop) and handles it. It returns an error when Run must end at once.
func (s *scheduler) wait(l *runLoop, more bool) error {
	f := s.f
	var todo chan<- *Task
	if s.pending != nil {
		todo = f.todo
	}
	var dnsOut chan<- *hostState
	var nextDNS *hostState
	if !l.stopping {
		dnsOut, nextDNS = s.dns.out()
	}
	var timerC, deadline <-chan time.Time
	if wake, ok := s.nextWake(); ok && s.pending == nil && !l.stopping && !s.paused {
		l.timer.Reset(max(time.Duration(wake-f.now()), 0))
		timerC = l.timer.C()
	}
	if l.stopDeadline != nil {
		deadline = l.stopDeadline.C()
	}
	select {
	case todo <- s.pending:
		s.pending = nil
	case o := <-f.done:
		s.releaseAll(o)
	case dnsOut <- nextDNS:
		s.dns.sent()
		f.stats.DNSLookups.Add(1)
	case r := <-s.dns.res:
		s.resolved(r)
	case r := <-s.flushDone:
		s.flushed(r, l)
	case req := <-f.checkpoints:
		info, err := s.checkpoint(req.sink)
		req.reply <- checkpointResp{info, err}
	case req := <-f.control:
		req.fn(s)
		close(req.done)
	case <-f.wake:
	case <-untilC(f):
	case <-timerC:
	case <-l.tick.C():
		l.tick.Reset(tickEvery)
		s.adjustFront()
		s.updateGauges()
	case <-l.ctxDone:
		l.ctxDone = nil
		if !l.stopping {
			l.stopping = true
			l.stopDeadline = f.clock.NewTimer(stopGrace)
		}
	case <-deadline:
		f.log.Warn("frontier: tasks still in flight at stop; their URLs are not saved", "in_flight", s.inFlight)
		return errors.Join(s.err, l.ctx.Err(), errStopped)
	case <-moreC(more):
		// The distributor stopped at its batch size with more to move:
		// go round again at once.
	}
	l.timer.Stop()
	return nil
}

// releaseAll releases o and whatever else came back, without going round
// the loop.
func (s *scheduler) releaseAll(o Outcome) {
	s.release(o)
	for n := 0; n < 256; n++ {
		select {
		case o := <-s.f.done:
			s.release(o)
		default:
			return
		}
	}
}

// flushed ends a sieve flush.
func (s *scheduler) flushed(r flushResult, l *runLoop) {
	f := s.f
	s.flushing = false
	f.stats.SieveFlushes.Add(1)
	if r.err != nil {
		if s.err == nil {
			s.err = fmt.Errorf("frontier: sieve flush: %w", r.err)
		}
		l.stopping = true
	} else if r.upTo > f.sieveFlushed.Load() {
		f.sieveFlushed.Store(r.upTo)
	}
}

// untilC is Config.Until while the frontier waits idle for it, else nil.
func untilC(f *Frontier) <-chan struct{} {
	if f.idle.Load() {
		return f.cfg.Until
	}
	return nil
}

// closedChan is always ready; moreC returns it when the loop must not block.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func moreC(more bool) <-chan struct{} {
	if more {
		return closedChan
	}
	return nil
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
	return s.queuedURLs == 0 && s.dist.held == nil && !s.dns.busy() && f.cfg.Ready.Len() == 0
}

// nextWake is when the earliest workbench entry (or DNS retry) becomes due.
func (s *scheduler) nextWake() (int64, bool) {
	t, ok := s.dns.nextRetry()
	if len(s.wb.entries) > 0 && !s.limitHit {
		if due := s.wb.entries[0].due; !ok || due < t {
			t, ok = due, true
		}
	}
	return t, ok
}

// flushWanted reports whether the sieve should be flushed before its
// buffer fills, the ready queue being empty: when keys wait in it and
// either the visit states are running short of URLs (fewer than
// lowWaterPerState per active visit state), or the fetchers wait on the
// backlog (fetchersWaitOnBacklog), or the keys waiting are at least half
// of those flushed before. A flush merges the whole store, so without the
// last bound a workbench with plenty of work (most of it virtualized)
// would flush as often as MinFlushGap allows, each time at a cost that
// grows with the URLs known; with it, the forced merges cost a bounded
// number of store rewrites per key.
func (s *scheduler) flushWanted(now int64) bool {
	in, flushed := s.f.sieveIn.Load(), s.f.sieveFlushed.Load()
	if in <= flushed {
		return false
	}
	return s.queuedURLs < lowWaterPerState*int64(max(s.dist.active, 1)) || s.fetchersWaitOnBacklog(now) ||
		2*(in-flushed) >= flushed
}

// fetchersWaitOnBacklog reports whether the fetchers wait for what the
// sieve holds: since the last flush began they waited, summed, at least
// the time elapsed (on average a fetcher idle all along), and the backlog
// holds URLs of more keys than the front has active, so that some of its
// keys have no work in the workbench. The low-water mark misses this
// case: a few keys held back by a Crawl-delay can each keep many URLs
// queued while the fetchers have nothing to take. A backlog of keys that
// are all active already does not count (a flush would not give the
// fetchers anything they can take sooner).
func (s *scheduler) fetchersWaitOnBacklog(now int64) bool {
	waited := s.f.stats.FetcherWaitNano.Load() - s.flushWait
	return waited >= now-s.lastFlush && s.f.backlog.count() > s.dist.active
}

// lowWaterPerState is the URLs per active visit state below which the
// workbench is short of work, and a flush of the sieve is due as soon as
// the ready queue is empty.
const lowWaterPerState = 4

func (s *scheduler) startFlush(now int64) {
	f := s.f
	s.flushing = true
	s.lastFlush = now
	s.flushWait = f.stats.FetcherWaitNano.Load()
	f.backlog.clear() // before upTo: a key added after it goes with a later flush
	upTo := f.sieveIn.Load()
	go func() {
		err := f.sieve.Flush()
		s.flushDone <- flushResult{upTo: upTo, err: err}
	}()
}

func (s *scheduler) updateGauges() {
	st := s.f.stats
	st.Queued.Store(s.queuedURLs)
	st.SieveBuffered.Store(s.f.SieveBuffered())
	st.QueuedBytes.Store(s.queuedBytes)
	st.Virtualized.Store(s.virtualized)
	st.VisitStates.Store(int64(len(s.states) + len(s.idleKeys)))
	st.RobotsHeld.Store(int64(len(s.robots.m)))
	st.HostsHeld.Store(int64(len(s.dns.hosts)))
	st.IPEntries.Store(int64(len(s.wb.byAddr)))
	st.ActiveKeys.Store(int64(s.dist.active))
	st.RequiredFront.Store(int64(s.dist.front))
}
