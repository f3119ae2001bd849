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
// hosts and robots.txt known, the workbench, the DNS backlog, and the
// accounting that decides when the crawl is over.
type scheduler struct {
	f      *Frontier
	set    *liveSettings // in force (replaced whole by reconfigure)
	wb     workbench
	assign Assign
	paused bool

	states  map[string]*visitState
	hosts   map[string]*hostState
	robots  map[string]*robotsState
	entries map[netip.Addr]*ipEntry
	nextID  uint64

	dnsReq      chan *hostState
	dnsRes      chan dnsResult
	dnsBacklog  []*hostState
	dnsInFlight int
	dnsRetry    []*hostState // failed resolutions waiting for their retry time

	pending      *Task
	flying       map[*Task]struct{} // tasks handed out and not yet back
	held         []byte             // a ready record waiting for room in the front
	queuedURLs   int64              // URLs held by visit states (RAM, disk, retries)
	queuedBytes  int64              // RAM bytes of visit-state queues
	virtualized  int64              // URLs held on disk by the virtualizer
	active       int                // visit states with work or a request in flight (the front)
	front        int                // required front size
	maxFront     int
	dispatched   int64
	pagesByKey   map[string]int64 // page fetches dispatched per scheme+authority (policies other than authority)
	inFlight     int
	limitHit     bool
	err          error
	lastWaitNano int64

	flushing  bool
	flushDone chan flushResult
	lastFlush int64

	popBuf []byte
	recBuf []byte // a queue record being built (place)
}

type dnsResult struct {
	host *hostState
	addr netip.Addr
	err  error
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
		wb:         workbench{parKey: c.ParallelPerKey, parIP: c.ParallelPerIP},
		assign:     c.Assign,
		states:     make(map[string]*visitState),
		hosts:      make(map[string]*hostState),
		robots:     make(map[string]*robotsState),
		entries:    make(map[netip.Addr]*ipEntry),
		dnsReq:     make(chan *hostState, 256),
		dnsRes:     make(chan dnsResult, 256),
		flushDone:  make(chan flushResult, 1),
		flying:     make(map[*Task]struct{}),
		pagesByKey: make(map[string]int64),
		front:      c.FrontSize,
	}
	// The front never grows beyond what the workbench can hold: a visit
	// state in RAM costs about 300 bytes plus its first URLs.
	s.maxFront = max(int(c.WorkbenchBytes/1024), s.front)
	return s
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
	defer close(f.runDone)
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
	ctxDone := ctx.Done() // nil once seen, so that a stop does not spin the loop

	for {
		now := f.now()
		more := false
		if !stopping {
			more = s.fill()
			s.retryDNS(now)
			if s.pending == nil && !s.paused {
				s.pending = s.next(now)
			}
			if p := f.sieveErr.Load(); p != nil && s.err == nil {
				s.err = *p
			}
			if s.err != nil {
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
				if s.err != nil {
					return s.err
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
		} else if !s.flushing && s.held == nil && f.cfg.Ready.Len() == 0 &&
			f.sieveIn.Load() > f.sieveFlushed.Load() && now-s.lastFlush >= int64(f.cfg.MinFlushGap) {
			s.startFlush(now)
		}

		var todo chan<- *Task
		if s.pending != nil {
			todo = f.todo
		}
		var dnsOut chan<- *hostState
		var nextDNS *hostState
		if len(s.dnsBacklog) > 0 && !stopping {
			dnsOut, nextDNS = s.dnsReq, s.dnsBacklog[0]
		}
		var timerC <-chan time.Time
		if wake, ok := s.nextWake(); ok && s.pending == nil && !stopping && !s.paused {
			timer.Reset(max(time.Duration(wake-f.now()), 0))
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
				if s.err == nil {
					s.err = fmt.Errorf("frontier: sieve flush: %w", r.err)
				}
				stopping = true
			} else if r.upTo > f.sieveFlushed.Load() {
				f.sieveFlushed.Store(r.upTo)
			}
		case req := <-f.checkpoints:
			info, err := s.checkpoint(req.sink)
			req.reply <- checkpointResp{info, err}
		case req := <-f.control:
			req.fn(s)
			close(req.done)
		case <-f.wake:
		case <-timerC:
		case <-tick.C:
			s.adjustFront()
			s.updateGauges()
		case <-ctxDone:
			ctxDone = nil
			if !stopping {
				stopping = true
				stopDeadline = time.After(time.Minute)
			}
		case <-stopDeadline:
			f.log.Warn("frontier: tasks still in flight at stop; their URLs are not saved", "in_flight", s.inFlight)
			return errors.Join(s.err, ctx.Err(), errStopped)
		case <-moreC(more):
			// The distributor stopped at its batch size with more to move:
			// go round again at once.
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
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
	return s.queuedURLs == 0 && s.held == nil && len(s.dnsBacklog) == 0 && s.dnsInFlight == 0 &&
		len(s.dnsRetry) == 0 && f.cfg.Ready.Len() == 0
}

// nextWake is when the earliest workbench entry (or DNS retry) becomes due.
func (s *scheduler) nextWake() (int64, bool) {
	var t int64
	ok := false
	if len(s.wb.entries) > 0 && !s.limitHit {
		t, ok = s.wb.entries[0].due, true
	}
	for _, h := range s.dnsRetry {
		if !ok || h.retryAt < t {
			t, ok = h.retryAt, true
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

// adjustFront grows the required front (the seed's requiredFrontSize) when
// fetchers wait for work while the distributor holds URLs back because the
// front is full; it never exceeds what the workbench can hold.
func (s *scheduler) adjustFront() {
	st := s.f.stats
	waited := st.FetcherWaitNano.Load()
	fetchersWaited := waited > s.lastWaitNano && len(s.f.todo) == 0 && s.pending == nil
	s.lastWaitNano = waited
	if fetchersWaited && s.held != nil && s.front < s.maxFront {
		s.front = min(s.maxFront, s.front+max(16, s.front/8))
	}
}

// fill is the distributor: it moves ready URLs into their visit states,
// keeping the front (the number of active visit states) at the required
// size and the RAM of the queues within the workbench budget; beyond the
// budget, URLs of visit states that already hold some go to the
// virtualizer, in order.
//
// It moves at most a batch per call, so that the scheduler keeps serving
// fetchers, and reports whether it stopped with more to move.
func (s *scheduler) fill() (more bool) {
	f := s.f
	for n := 0; ; n++ {
		if n == 4096 {
			return true
		}
		rec := s.held
		if rec == nil {
			r, ok, err := f.cfg.Ready.Pop(s.popBuf[:0])
			if err != nil {
				s.err = fmt.Errorf("frontier: ready queue pop: %w", err)
				return false
			}
			if !ok {
				return false
			}
			s.popBuf = r
			rec = r
			f.stats.Ready.Add(-1)
		}
		if !s.place(rec, false) {
			if s.held == nil {
				s.held = append([]byte(nil), rec...)
			}
			return false
		}
		s.held = nil
		if s.err != nil {
			return false
		}
	}
}

// place puts one ready record (meta+URL) in its visit state, creating it
// if needed. Unless force is set, it refuses (returns false, record not
// taken) when that would activate a visit state beyond the required front.
// With the ip policy, a record whose host is not resolved yet is parked on
// the host until the DNS stage answers.
func (s *scheduler) place(rec []byte, force bool) bool {
	f := s.f
	if len(rec) < MetaLen {
		f.log.Error("frontier: ready record without meta dropped", "len", len(rec))
		return true
	}
	url := rec[MetaLen:]
	sa := schemeAuthorityOf(url)
	var v *visitState
	var key string
	prefixLen := len(sa)
	switch s.assign.kind {
	case assignAuthority:
		v = s.states[string(sa)] // no allocation for the lookup
	case assignIP:
		h := s.hostFor(hostOf(string(sa)))
		switch {
		case h.dead:
			s.drop(h)
			return true
		case !h.resolved:
			h.parked = append(h.parked, append([]byte(nil), rec...))
			s.queuedURLs++
			if !h.resolving && h.retryAt == 0 {
				h.resolving = true
				s.dnsBacklog = append(s.dnsBacklog, h)
			}
			return true
		}
		key, prefixLen = "ip:"+h.addr.String(), 0
		v = s.states[key]
	default:
		key, prefixLen = s.assign.key(sa, url)
		v = s.states[key]
	}
	if !force && (v == nil || !v.active) && s.active >= s.front {
		return false
	}
	if v == nil {
		prefix := string(url[:prefixLen])
		if key == "" {
			key = prefix
		}
		v = s.newVisitState(key, prefix, hostOf(string(sa)))
	}
	if v.broken {
		f.stats.PurgedURLs.Add(1)
		return true
	}
	// The record is meta+suffix: move the meta next to the suffix.
	var r []byte
	if prefixLen < MetaLen {
		r = append(append(s.recBuf[:0], rec[:MetaLen]...), url[prefixLen:]...)
		s.recBuf = r
	} else {
		r = rec[prefixLen:]
		copy(r, rec[:MetaLen])
	}
	if err := s.add(v, r); err != nil {
		s.err = err
	}
	return true
}

// add appends a record to v: in RAM while the workbench is within budget
// and nothing of v is on disk, to the virtualizer otherwise (each active
// visit state keeps at least one URL in RAM).
func (s *scheduler) add(v *visitState, rec []byte) error {
	virt := s.f.cfg.Virtualizer
	if virt != nil && (v.onDisk > 0 || (s.queuedBytes >= s.set.WorkbenchBytes && v.queue.len() > 0)) {
		if err := virt.Enqueue(v.id, rec); err != nil {
			return fmt.Errorf("frontier: virtualize: %w", err)
		}
		v.onDisk++
		s.virtualized++
		s.f.stats.VirtualizedTotal.Add(1)
	} else {
		before := v.queue.bytes()
		v.queue.push(rec)
		s.queuedBytes += int64(v.queue.bytes() - before)
	}
	s.queuedURLs++
	s.activate(v)
	if v.heapIndex < 0 && v.entry != nil && !v.waiting && v.inFlight < s.wb.parKey {
		s.wb.offer(v)
	}
	return nil
}

// activate counts v in the front.
func (s *scheduler) activate(v *visitState) {
	if !v.active {
		v.active = true
		s.active++
	}
}

// settle takes an idle visit state (no work, nothing in flight) out of the
// front; with one URL per key it is forgotten altogether.
func (s *scheduler) settle(v *visitState) {
	s.wb.offer(v)
	if v.hasWork() || v.inFlight > 0 || v.waiting {
		return
	}
	if v.active {
		v.active = false
		s.active--
	}
	if s.assign.oneURLPerKey() && !v.broken {
		delete(s.states, v.key)
		if v.entry != nil {
			v.entry.members--
		}
	}
}

func (s *scheduler) newVisitState(key, prefix, host string) *visitState {
	s.nextID++
	v := &visitState{key: key, prefix: prefix, id: s.nextID, heapIndex: -1}
	s.states[key] = v
	h := s.hostFor(host)
	v.host = h
	switch {
	case h.resolved:
		s.attach(v)
	case h.dead:
		v.broken = true
	default:
		s.waitHost(v, h)
	}
	return v
}

// hostFor returns the state of a host name, creating it.
func (s *scheduler) hostFor(name string) *hostState {
	h := s.hosts[name]
	if h == nil {
		h = &hostState{name: name}
		s.hosts[name] = h
	}
	return h
}

// waitHost withdraws v until h is resolved, asking the DNS stage for it.
func (s *scheduler) waitHost(v *visitState, h *hostState) {
	v.waiting = true
	s.wb.withdraw(v)
	h.waiters = append(h.waiters, v)
	if !h.resolving && h.retryAt == 0 {
		h.resolving = true
		s.dnsBacklog = append(s.dnsBacklog, h)
	}
}

// attach puts v in the workbench entry of its host's address.
func (s *scheduler) attach(v *visitState) {
	e := s.entryFor(v.host.addr)
	e.members++
	v.entry = e
	v.waiting = false
	s.wb.offer(v)
}

// entryFor returns the workbench entry of an address, creating it.
func (s *scheduler) entryFor(a netip.Addr) *ipEntry {
	e := s.entries[a]
	if e == nil {
		e = &ipEntry{addr: a, heapIndex: -1}
		s.entries[a] = e
	}
	return e
}

// robotsFor returns the robots.txt state of a scheme+authority.
func (s *scheduler) robotsFor(sa string) *robotsState {
	r := s.robots[sa]
	if r == nil {
		r = &robotsState{}
		s.robots[sa] = r
	}
	return r
}

// wake ends the wait of visit states withdrawn for a host or a robots.txt.
func (s *scheduler) wake(list []*visitState) {
	for _, v := range list {
		if v.entry == nil {
			if v.host.resolved {
				s.attach(v)
			}
			continue
		}
		v.waiting = false
		s.wb.offer(v)
	}
}

// next returns a task that may start now, or nil.
func (s *scheduler) next(now int64) *Task {
	f := s.f
	for len(s.wb.entries) > 0 && !s.limitHit && s.err == nil {
		e := s.wb.entries[0]
		if e.due > now {
			return nil
		}
		v := e.states[0]
		rec, attempt, ok := s.pop(v)
		if !ok {
			s.settle(v)
			continue
		}
		var sa, pq string
		h := v.host
		if s.assign.kind == assignAuthority {
			sa, pq = v.prefix, rec[MetaLen:]
		} else {
			url := v.prefix + rec[MetaLen:]
			sa = string(schemeAuthorityOf([]byte(url)))
			pq = url[len(sa):]
			if name := hostOf(sa); name != h.name {
				h = s.hostFor(name)
			}
		}
		if h.dead {
			s.drop(h)
			continue
		}
		if !h.resolved {
			s.putBack(v, rec, attempt)
			s.waitHost(v, h)
			continue
		}
		rs := v.rs
		if rs == nil {
			rs = s.robotsFor(sa)
			if s.assign.kind == assignAuthority {
				v.rs = rs
			}
		}
		if rs.dead {
			f.stats.PurgedURLs.Add(1)
			continue
		}
		if rs.rules != nil && now >= rs.expires {
			rs.rules = nil
		}
		// With a policy that puts several hosts in one visit state, this
		// URL's address may not be the visit state's: its own workbench
		// entry must allow a request too (the IP rule holds for every
		// request), and is held while it is in flight.
		var other *ipEntry
		if h.addr != e.addr {
			other = s.entryFor(h.addr)
			if other.inFlight >= s.wb.parIP || other.nextFetch > now {
				s.putBack(v, rec, attempt)
				// Look again when that entry may allow it (it is not
				// watched for us: a busy entry is polled, at most every
				// 10 ms or IP delay).
				v.nextFetch = max(v.nextFetch, other.nextFetch, now+int64(max(s.set.IPDelay, 10*time.Millisecond)))
				s.wb.offer(v)
				continue
			}
		}
		t := &Task{SchemeAuthority: sa, Addr: h.addr, vs: v, other: other}
		if rs.rules == nil {
			s.putBack(v, rec, attempt)
			if rs.inFlight {
				v.waiting = true
				s.wb.withdraw(v)
				rs.waiters = append(rs.waiters, v)
				continue
			}
			t.PathQuery, t.Robots = "/robots.txt", true
			rs.inFlight = true
		} else {
			if attempt == 0 && !rs.rules.Allowed(pq) {
				f.stats.RobotsDenied.Add(1)
				continue
			}
			if attempt == 0 && s.cut(v, sa, pq, rec) {
				continue
			}
			if s.set.MaxURLs > 0 && s.dispatched >= s.set.MaxURLs {
				s.putBack(v, rec, attempt)
				s.limitHit = true
				return nil
			}
			s.dispatched++
			if attempt == 0 {
				s.countPage(v, sa)
			}
			t.PathQuery, t.Attempt = pq, attempt
			t.Meta = decodeMeta(rec[:MetaLen])
		}
		v.inFlight++
		e.inFlight++
		if other != nil {
			other.inFlight++
			s.wb.fix(other)
		}
		s.inFlight++
		s.flying[t] = struct{}{}
		f.stats.InFlight.Add(1)
		s.wb.offer(v)
		return t
	}
	return nil
}

// cut reports whether a queued page URL of v (sa+pq, record rec) is
// refused at dispatch by a limit narrowed since it was queued (see
// Settings), and counts it.
func (s *scheduler) cut(v *visitState, sa, pq, rec string) bool {
	set := s.set
	cut := set.MaxURLsPerKey > 0 && s.pagesOf(v, sa) >= set.MaxURLsPerKey
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

// drop counts a URL whose host is dead.
func (s *scheduler) drop(h *hostState) {
	if h.refused {
		s.f.stats.AddressRefused.Add(1)
	} else {
		s.f.stats.PurgedURLs.Add(1)
	}
}

// pop takes the next record of v: retries first, then the RAM queue,
// refilled from the virtualizer when it runs dry.
func (s *scheduler) pop(v *visitState) (rec string, attempt int, ok bool) {
	if len(v.retries) > 0 {
		r := v.retries[0]
		v.retries[0] = retry{}
		v.retries = v.retries[1:]
		s.queuedURLs--
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
	s.queuedURLs--
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
		s.queuedURLs -= v.onDisk
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
	v.retries = append([]retry{{rec: rec, attempt: attempt}}, v.retries...)
	s.queuedURLs++
}

// record rebuilds the queue record (meta+suffix) of a task of v.
func (t *Task) record() string {
	suffix := (t.SchemeAuthority + t.PathQuery)[len(t.vs.prefix):]
	return string(t.Meta.Append(make([]byte, 0, MetaLen+len(suffix)))) + suffix
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
	delete(s.flying, t)
	f.stats.InFlight.Add(-1)
	end := f.now()
	if !o.End.IsZero() {
		end = f.at(o.End)
	}
	if oe := t.other; oe != nil {
		oe.inFlight--
		oe.nextFetch = max(oe.nextFetch, end+int64(s.set.IPDelay))
		s.wb.fix(oe)
	}
	delay, why := s.keyDelay(t.SchemeAuthority, o)

	if t.Robots {
		rs := s.robotsFor(t.SchemeAuthority)
		rs.inFlight = false
		switch {
		case o.Result == Abandoned:
		case o.Result == Fetched && o.Robots != nil:
			rs.rules = o.Robots
			rs.expires = end + int64(s.set.RobotsExpiry)
			rs.fails = 0
			delay, why = s.keyDelay(t.SchemeAuthority, o)
		default:
			// robots.txt unavailable (5xx, unreachable): nothing of the
			// authority is fetched for now; retry with backoff, give up
			// after the retries.
			rs.fails++
			if rs.fails > s.set.MaxRetries {
				rs.dead = true
				f.log.Info("frontier: robots.txt unavailable, URLs dropped", "authority", t.SchemeAuthority)
				if v.prefix == t.SchemeAuthority || s.assign.kind == assignAuthority {
					s.purge(v)
				}
			} else if b := s.set.RetryDelay << min(rs.fails-1, 8); b > delay {
				delay, why = b, DelayRobotsBackoff
			}
		}
		waiters := rs.waiters
		rs.waiters = nil
		s.wake(waiters)
	} else {
		switch o.Result {
		case Fetched:
			v.failures = 0
		case RetryLater:
			if t.Attempt < s.set.MaxRetries {
				v.retries = append(v.retries, retry{rec: t.record(), attempt: t.Attempt + 1})
				s.queuedURLs++
				f.stats.Retries.Add(1)
				if s.set.RetryDelay > delay {
					delay, why = s.set.RetryDelay, DelayRetry
				}
				break
			}
			fallthrough
		case Failed:
			v.failures++
			if v.failures >= f.cfg.MaxFailures {
				s.purge(v)
			}
		case Abandoned:
			s.putBack(v, t.record(), t.Attempt)
			s.dispatched--
			if t.Attempt == 0 {
				s.uncountPage(v, t.SchemeAuthority)
			}
		}
	}
	v.nextFetch = max(v.nextFetch, end+int64(delay))
	v.delay, v.delayWhy = delay, why
	e.nextFetch = max(e.nextFetch, end+int64(s.set.IPDelay))
	s.settle(v)
	s.wb.fix(e)
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
	if rs := s.robots[sa]; rs != nil && rs.rules != nil {
		if cd := min(rs.rules.CrawlDelay(), c.CrawlDelayCap); cd > d {
			d, why = cd, DelayCrawlDelay
		}
	}
	if o.RetryAfter > d {
		d, why = min(o.RetryAfter, c.MaxDelay), DelayRetryAfter
	}
	return d, why
}

// purge drops a broken visit state's URLs (BUbiNG's brokenVisitStates).
func (s *scheduler) purge(v *visitState) {
	if v.broken {
		return
	}
	n := s.empty(v)
	s.f.stats.BrokenKeys.Add(1)
	s.f.stats.PurgedURLs.Add(n)
	s.f.log.Info("frontier: visit state purged as broken", "key", v.key, "urls", n)
}

// empty drops v's URLs and marks it broken (nothing more of it is
// fetched), returning the URLs dropped.
func (s *scheduler) empty(v *visitState) int64 {
	f := s.f
	s.wb.withdraw(v)
	n := v.queued()
	s.queuedURLs -= n
	s.queuedBytes -= int64(v.queue.bytes())
	if v.onDisk > 0 {
		if _, err := f.cfg.Virtualizer.Remove(v.id); err != nil {
			f.log.Error("frontier: virtualizer remove", "key", v.key, "err", err)
		}
		s.virtualized -= v.onDisk
	}
	v.queue, v.retries, v.onDisk = pathQueue{}, nil, 0
	v.broken = true
	if v.active && v.inFlight == 0 {
		v.active = false
		s.active--
	}
	return n
}

// dnsWorker resolves hosts for the DNS stage.
func (s *scheduler) dnsWorker(ctx context.Context) {
	f := s.f
	for {
		select {
		case <-ctx.Done():
			return
		case h := <-s.dnsReq:
			r := dnsResult{host: h}
			addrs, err := f.cfg.Resolver.Lookup(ctx, h.name)
			switch {
			case err != nil:
				r.err = err
			case len(addrs) == 0:
				r.err = fmt.Errorf("frontier: resolve %s: no addresses", h.name)
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

// PermanentDNS marks resolver errors that retrying cannot fix (a name that
// does not exist, a special-use name absent from the hosts file).
type PermanentDNS interface{ Permanent() bool }

func isPermanentDNS(err error) bool {
	var p PermanentDNS
	return errors.As(err, &p) && p.Permanent()
}

// resolved ends a resolution: the waiting visit states are attached to the
// workbench entry of the address, or the host is retried, or declared dead
// (its visit states purged).
func (s *scheduler) resolved(r dnsResult) {
	f := s.f
	h := r.host
	h.resolving = false
	if r.err != nil {
		var refused *refusedError
		switch {
		case errors.As(r.err, &refused):
			h.dead, h.refused = true, true
			f.log.Info("frontier: address refused", "host", h.name, "err", r.err)
		default:
			h.fails++
			if h.fails <= f.cfg.DNSRetries && !isPermanentDNS(r.err) {
				h.retryAt = f.now() + int64(s.set.RetryDelay<<(h.fails-1))
				s.dnsRetry = append(s.dnsRetry, h)
				return
			}
			h.dead = true
			f.stats.DNSFailures.Add(1)
			f.log.Info("frontier: name did not resolve", "host", h.name, "err", r.err)
		}
		for range h.parked {
			s.queuedURLs--
			s.drop(h)
		}
		h.parked = nil
		waiters := h.waiters
		h.waiters = nil
		for _, v := range waiters {
			if v.host == h {
				if h.refused {
					f.stats.AddressRefused.Add(v.queued())
				}
				s.purge(v)
				continue
			}
			v.waiting = false
			s.wb.offer(v)
		}
		return
	}
	if to := f.cfg.Router.AddrOwner(r.addr); to != Self {
		// See Router: no hand-off of a host to another agent yet.
		if s.err == nil {
			s.err = fmt.Errorf("frontier: %s resolved to %s, which agent %q fetches from; handing a host to another agent is not supported", h.name, r.addr, to)
		}
	}
	h.addr, h.resolved = r.addr, true
	waiters := h.waiters
	h.waiters = nil
	s.wake(waiters)
	parked := h.parked
	h.parked = nil
	for _, rec := range parked {
		s.queuedURLs--
		s.place(rec, true)
	}
}

// retryDNS moves failed resolutions whose time has come back to the backlog.
func (s *scheduler) retryDNS(now int64) {
	for i := 0; i < len(s.dnsRetry); {
		h := s.dnsRetry[i]
		if h.retryAt <= now {
			h.retryAt = 0
			h.resolving = true
			s.dnsBacklog = append(s.dnsBacklog, h)
			last := len(s.dnsRetry) - 1
			s.dnsRetry[i] = s.dnsRetry[last]
			s.dnsRetry[last] = nil
			s.dnsRetry = s.dnsRetry[:last]
			continue
		}
		i++
	}
}

func (s *scheduler) updateGauges() {
	st := s.f.stats
	st.Queued.Store(s.queuedURLs)
	st.QueuedBytes.Store(s.queuedBytes)
	st.Virtualized.Store(s.virtualized)
	st.VisitStates.Store(int64(len(s.states)))
	st.IPEntries.Store(int64(len(s.entries)))
	st.ActiveKeys.Store(int64(s.active))
	st.RequiredFront.Store(int64(s.front))
}

// Close saves the frontier's queued URLs and closes the sieve. Call it after
// Run has returned and after every producer of Enqueue has stopped. URLs held
// by visit states (in RAM, retried, or virtualized), the one held back by
// the distributor and those parked on hosts being resolved go back to the ready queue (the sieve has already marked
// them seen), so that a crawl restarted on the same state resumes them.
func (f *Frontier) Close() error {
	s := f.sched
	var errs []error
	var buf []byte
	f.readyMu.Lock()
	saved := 0
	push := func(b []byte) {
		if err := f.cfg.Ready.Push(b); err != nil {
			errs = append(errs, fmt.Errorf("frontier: save queued URL: %w", err))
			return
		}
		saved++
	}
	if s.held != nil {
		push(s.held)
		s.held = nil
	}
	for _, h := range s.hosts {
		for _, rec := range h.parked {
			push(rec)
		}
		h.parked = nil
	}
	for _, v := range s.states {
		if v.broken {
			continue
		}
		save := func(r []byte) {
			buf = append(append(append(buf[:0], r[:MetaLen]...), v.prefix...), r[MetaLen:]...)
			push(buf)
		}
		for _, r := range v.retries {
			save([]byte(r.rec))
		}
		v.queue.each(save)
		for v.onDisk > 0 && len(errs) == 0 {
			recs, err := f.cfg.Virtualizer.DequeueN(v.id, 1024)
			if err != nil || len(recs) == 0 {
				errs = append(errs, fmt.Errorf("frontier: save virtualized URLs of %s: %v", v.key, err))
				break
			}
			for _, r := range recs {
				save(r)
			}
			v.onDisk -= int64(len(recs))
		}
		v.queue, v.retries, v.onDisk = pathQueue{}, nil, 0
	}
	f.readyMu.Unlock()
	s.queuedURLs, s.queuedBytes, s.virtualized = 0, 0, 0
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
