package frontier

import (
	"context"
	"errors"
	"math"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// The hand-off of addresses between the agents of a crawl. With design
// (a) of the cluster's per-address politeness, an agent schedules the
// URLs of the addresses it owns (Router.AddrOwner); when a new view moves
// an address to another agent, the old owner stops dispatching to it,
// hands its visit states' URLs to the new owner (ReadyRouter.ForwardReady)
// and, once nothing is in flight to it, tells the new owner how long to
// wait before the first request (the remaining IP and key delays, from
// MoveOut). The new owner holds the address (HoldAddrs) until that
// release (ReleaseAddrs).
//
// Invariants:
//   - a held workbench entry is never due: its nextFetch is heldTime and
//     the time it would have had is kept in heldNext (release raises it);
//     nothing is dispatched to it. An entry is held while a hold predicate
//     selects its address (the new owner awaiting a release) or while its
//     address belongs to another agent (gone: the old owner).
//   - a visit state whose address another agent owns is moved: it is never
//     offered to the workbench, each record added to it is forwarded at
//     once, and what it held is forwarded once nothing of it is in flight
//     (takeOut, through addQueued: the queued-URL count has one place that
//     changes it).
//   - MoveOut, HoldAddrs, ReleaseAddrs and Rehome run on the scheduler
//     goroutine (Frontier.do).

// heldTime is the nextFetch of a held entry: never reached.
const heldTime = math.MaxInt64 / 2

// holdSet is the frontier's set of holds awaiting a release. It is safe
// for concurrent use: holds are taken before the scheduler runs (an agent
// joining a crawl) as well as while it does.
type holdSet struct {
	mu     sync.Mutex
	preds  map[uint64]func(netip.Addr) bool // by id
	nextID uint64
	n      atomic.Int32 // len(preds), read without the lock
	// notBefore: per released address, the earliest start of its next
	// request (the release's wait from its receipt), for entries made
	// after the release.
	notBefore map[netip.Addr]int64
}

// earliest returns the release's bound on a's next request (0: none).
func (h *holdSet) earliest(a netip.Addr) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.notBefore[a]
}

func (h *holdSet) selects(a netip.Addr) bool {
	if h.n.Load() == 0 {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.preds {
		if p(a) {
			return true
		}
	}
	return false
}

func (h *holdSet) add(p func(netip.Addr) bool) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.preds == nil {
		h.preds = map[uint64]func(netip.Addr) bool{}
	}
	h.nextID++
	h.preds[h.nextID] = p
	h.n.Store(int32(len(h.preds)))
	return h.nextID
}

func (h *holdSet) remove(id uint64) func(netip.Addr) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.preds[id]
	delete(h.preds, id)
	h.n.Store(int32(len(h.preds)))
	return p
}

// hold stops dispatching to e, keeping the time it would have had.
func (s *scheduler) hold(e *ipEntry) {
	if !e.held {
		e.held, e.heldNext, e.nextFetch = true, e.nextFetch, heldTime
		s.wb.fix(e)
	}
}

// unhold lets e be dispatched to again, no earlier than at.
func (s *scheduler) unhold(e *ipEntry, at int64) {
	if e.held {
		e.held, e.nextFetch = false, max(e.heldNext, at)
		s.wb.fix(e)
	}
}

// addrOwner is the router's owner of a, Self for an invalid address.
func (s *scheduler) addrOwner(a netip.Addr) Peer {
	if !a.IsValid() {
		return Self
	}
	return s.f.cfg.Router.AddrOwner(a)
}

// attachOrMove attaches v to its entry, or marks it moved when another
// agent owns its address. A held address's new entry starts held.
func (s *scheduler) attachOrMove(v *visitState) {
	if to := s.addrOwner(v.host.addr); to != Self {
		s.handOn(v, to)
		v.setPhase(phaseResolving) // withdrawn: never offered
		if err := s.moveOut(v); err != nil && s.err == nil {
			s.err = err
		}
		return
	}
	e := s.wb.entryFor(v.host.addr)
	if e.members == 0 {
		if t := s.f.holds.earliest(e.addr); t > e.nextFetch && !e.held {
			e.nextFetch = t
		}
	}
	if !e.held && s.f.holds.selects(e.addr) {
		s.hold(e)
	}
	e.members++
	v.entry = e
	v.setPhase(phaseReady)
	s.wb.offer(v)
}

// forwardMoved sends one record (meta+suffix of v) to the owner of v's
// address, as a hand-over record (handover.go). With handed set, the first
// record of each authority carries its robots.txt rules (handrobots.go);
// handed records the authorities done.
func (s *scheduler) forwardMoved(v *visitState, rec []byte, handed map[string]bool) error {
	rr, ok := s.f.cfg.Router.(ReadyRouter)
	if !ok {
		return errNoReadyRouter
	}
	url := make([]byte, 0, len(v.prefix())+len(rec)-MetaLen)
	url = append(append(url, v.prefix()...), rec[MetaLen:]...)
	ho := Handover{Gen: v.gen, Addr: s.handoverAddr(v, url)}
	if sa := schemeAuthorityOf(url); handed != nil && !handed[string(sa)] {
		handed[string(sa)] = true
		ho.Robots = s.handedRobots(string(sa))
	}
	full := make([]byte, 0, 22+MetaLen+len(url))
	full = append(AppendHandover(full, ho, rec[:MetaLen]), url...)
	s.f.stats.HandedOverURLs.Add(1)
	return rr.ForwardReady(v.movedTo(), full)
}

// takeOut removes and returns every record v holds (retries, the RAM
// queue, the virtualized tail), as meta+suffix, keeping the counts.
func (s *scheduler) takeOut(v *visitState) ([][]byte, error) {
	var out [][]byte
	for _, r := range v.retries() {
		out = append(out, []byte(r.rec))
	}
	v.queue.each(func(rec []byte) { out = append(out, append([]byte(nil), rec...)) })
	if v.onDisk > 0 {
		recs, err := s.f.cfg.Virtualizer.DequeueN(v.id, int(v.onDisk))
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
		s.virtualized -= v.onDisk
	}
	s.wb.withdraw(v)
	s.addQueued(-v.queued())
	s.queuedBytes -= int64(v.queue.bytes())
	v.queue, v.onDisk = pathQueue{}, 0
	v.setRetries(nil)
	return out, nil
}

// moveOut forwards what v holds to v.movedTo(), once nothing of it is in
// flight, and detaches it from its entry.
func (s *scheduler) moveOut(v *visitState) error {
	if v.inFlight > 0 {
		return nil
	}
	recs, err := s.takeOut(v)
	if err != nil {
		return err
	}
	handed := map[string]bool{}
	for _, r := range recs {
		if err := s.forwardMoved(v, r, handed); err != nil {
			return err
		}
	}
	if v.entry != nil {
		v.entry.members--
		v.entry = nil
	}
	s.deactivate(v)
	return nil
}

// MoveOut is the old owner's step of a view change, to call after the
// router answers with the new view: every workbench entry of an address
// another agent now owns is held (nothing more is dispatched to it), the
// visit states on it are marked moved and, those with nothing in flight,
// emptied to the new owner. It returns how many requests to such
// addresses are still in flight (call it again until none is: the
// release must wait for them) and, for each such address, the time to
// wait before the next request to it: the larger of its IP delay's and
// its keys' remaining delays.
func (f *Frontier) MoveOut(ctx context.Context) (inFlight int, waits map[netip.Addr]time.Duration, err error) {
	waits = map[netip.Addr]time.Duration{}
	derr := f.do(ctx, func(s *scheduler) {
		now := f.now()
		gone := map[*ipEntry]bool{}
		for a, e := range s.wb.byAddr {
			if s.addrOwner(a) != Self {
				s.hold(e)
				gone[e] = true
				waits[a] = time.Duration(max(e.heldNext-now, 0))
				inFlight += e.inFlight
			}
		}
		s.idleWaits(gone, now, waits)
		for _, v := range s.states {
			e := v.entry
			if v.movedTo() == "" && (e == nil || !gone[e]) {
				continue
			}
			if v.host.resolved {
				a := v.host.addr
				if d := time.Duration(v.nextFetch - now); d > waits[a] {
					waits[a] = d
				}
			}
			if e != nil && v.movedTo() == "" {
				s.handOn(v, s.addrOwner(e.addr))
			}
			if err = s.moveOut(v); err != nil {
				return
			}
		}
		startWaits(waits, s.set, now)
	})
	if err == nil {
		err = derr
	}
	return inFlight, waits, err
}

// startWaits raises every wait to the base delays counted from this
// frontier's start (time 0 of its clock): an earlier process on the same
// crawl directory, killed, may have made requests that no checkpoint
// recorded, the last ending no later than this process's start, so its
// restored visit states' times do not bound the next request.
func startWaits(waits map[netip.Addr]time.Duration, set *liveSettings, now int64) {
	floor := time.Duration(int64(max(set.HostDelay, set.IPDelay)) - now)
	if floor <= 0 {
		return
	}
	for a, d := range waits {
		waits[a] = max(d, floor)
	}
}

// HoldGivenUp holds, as MoveOut does, every workbench entry of an address
// another agent now owns, and moves nothing out: a leaving agent takes
// its checkpoint once nothing is in flight to them, before its queues
// move. It returns how many requests to such addresses are in flight.
// Tasks dispatched and not begun go back, as at HoldAddrs: they are not in
// flight, and with the zombie guard closed (a start that resumes a leave)
// no fetcher would ever begin them.
func (f *Frontier) HoldGivenUp(ctx context.Context) (inFlight int, err error) {
	err = f.do(ctx, func(s *scheduler) {
		for a, e := range s.wb.byAddr {
			if s.addrOwner(a) != Self {
				s.hold(e)
			}
		}
		s.f.gen.Add(1)
		s.takeBack()
		for a, e := range s.wb.byAddr {
			if s.addrOwner(a) != Self {
				inFlight += e.inFlight
			}
		}
	})
	return inFlight, err
}

// Released returns a channel closed when the scheduler next takes a task
// back from a fetcher (its request ended, or it was never begun): what
// MoveOut and HoldGivenUp count in flight may have fallen. Take it before
// the call whose count it waits on, so that no release is missed.
func (f *Frontier) Released() <-chan struct{} { return f.released.Wait() }

// AtLimit reports whether MaxURLs page fetches are dispatched: nothing
// more is dispatched until the limit is raised. Safe for concurrent use.
func (f *Frontier) AtLimit() bool { return f.atLimit.Load() }

// Settled returns a channel closed when the scheduler next finds nothing
// to do: Idle may then hold. Take it before calling Idle.
func (f *Frontier) Settled() <-chan struct{} { return f.settled.Wait() }

// HoldAddrs is the new owner's step of a view change: the addresses held
// selects get no request until ReleaseAddrs(id); their URLs are taken
// and scheduled meanwhile.
// It may be called before Run.
func (f *Frontier) HoldAddrs(ctx context.Context, held func(netip.Addr) bool) (id uint64, err error) {
	id = f.holds.add(held)
	if !f.running.Load() {
		return id, nil // entries made from now on check the holds
	}
	err = f.do(ctx, func(s *scheduler) {
		for a, e := range s.wb.byAddr {
			if held(a) {
				s.hold(e)
			}
		}
		// Tasks dispatched and not begun (in Todo's buffer, or taken by
		// a fetcher waiting for the zombie guard) may be to a held
		// address: they go back, and come again only if not held.
		s.f.gen.Add(1)
		s.takeBack()
	})
	if errors.Is(err, ErrNotRunning) {
		err = nil
	}
	return id, err
}

// ReleaseAddrs ends the hold id: each address it held and no other hold
// selects may be fetched again from now plus its wait in waits (zero when
// absent).
func (f *Frontier) ReleaseAddrs(ctx context.Context, id uint64, waits map[netip.Addr]time.Duration) error {
	p := f.holds.remove(id)
	if p == nil {
		return nil
	}
	now := f.now()
	f.holds.mu.Lock()
	if f.holds.notBefore == nil {
		f.holds.notBefore = map[netip.Addr]int64{}
	}
	for a, d := range waits {
		f.holds.notBefore[a] = max(f.holds.notBefore[a], later(now, d))
	}
	f.holds.mu.Unlock()
	if !f.running.Load() {
		return nil
	}
	err := f.do(ctx, func(s *scheduler) {
		for a, e := range s.wb.byAddr {
			if e.held && p(a) && !f.holds.selects(a) && s.addrOwner(a) == Self {
				// An earlier release of a hold over a as well may have
				// set the longer wait.
				s.unhold(e, max(later(now, waits[a]), f.holds.earliest(a)))
			}
		}
	})
	if errors.Is(err, ErrNotRunning) {
		err = nil
	}
	return err
}

// DelayAddrs makes each address of waits get no request earlier than its
// wait from now: a release's waits kept across a restart of the new
// owner. Call it before Run; it bounds the entries made from then on.
func (f *Frontier) DelayAddrs(waits map[netip.Addr]time.Duration) {
	now := f.now()
	f.holds.mu.Lock()
	defer f.holds.mu.Unlock()
	if f.holds.notBefore == nil {
		f.holds.notBefore = map[netip.Addr]int64{}
	}
	for a, d := range waits {
		f.holds.notBefore[a] = max(f.holds.notBefore[a], later(now, d))
	}
}

// Rehome follows a view change for what comes back: a moved visit state
// whose address this agent owns again is attached again, and an entry
// held only because another agent owned it is released (the holds of
// HoldAddrs still apply).
func (f *Frontier) Rehome(ctx context.Context) error {
	return f.do(ctx, func(s *scheduler) {
		for a, e := range s.wb.byAddr {
			if e.held && s.addrOwner(a) == Self && !f.holds.selects(a) {
				s.unhold(e, 0)
			}
		}
		for _, v := range s.states {
			if v.movedTo() != "" && v.host.resolved && s.addrOwner(v.host.addr) == Self {
				v.setMovedTo("")
				s.attachOrMove(v)
			}
		}
	})
}

// Holding returns how many holds await their release.
func (f *Frontier) Holding() int { return int(f.holds.n.Load()) }

var errNoReadyRouter = errors.New("frontier: the router names another agent for an address but cannot forward to it (no ReadyRouter)")

// TakeCounts removes and returns the per-key URL counts (the budget used)
// of the keys whose group slot (sieve.Slot of a count key) is in, by count
// key: the old owner's part of a hand-off.
func (f *Frontier) TakeCounts(in func(slot uint32) bool) map[uint64]int64 { return f.counts.take(in) }

// SlotCounts returns a copy of the per-key URL counts of the keys whose
// group slot is in, by count key, leaving them in place.
func (f *Frontier) SlotCounts(in func(slot uint32) bool) map[uint64]int64 { return f.counts.of(in) }

// AddCounts adds handed-over per-key URL counts (by count key, as
// TakeCounts returns them) to this agent's; a negative count takes off.
func (f *Frontier) AddCounts(m map[uint64]int64) { f.counts.addAll(m) }

// RouteBarrier returns once every URL whose owner was asked of the Router
// before the call has reached this agent's sieve or been forwarded: after
// the router's view changed, what the sieve holds of the keys given up is
// complete.
func (f *Frontier) RouteBarrier() {
	f.routeMu.Lock()
	f.routeMu.Unlock() //nolint:staticcheck // an empty critical section: the barrier
}
