package frontier

import "fmt"

// The distributor (BUbiNG's) moves URLs from the ready queue into their
// visit states. Its state is owned by the scheduler goroutine.
//
// Invariants:
//   - the front (visit states counted active) grows beyond the required
//     front size only through records placed by force (those parked for
//     DNS); a record whose visit state would exceed it waits in held,
//     the only record taken from the ready queue and not placed;
//   - the required front never exceeds maxFront, what the workbench budget
//     can hold;
//   - a record goes to the virtualizer, not RAM, when its visit state has
//     records on disk already (FIFO order), or when the workbench is over
//     budget and the visit state keeps one in RAM.
type distributor struct {
	held         []byte // a ready record waiting for room in the front
	active       int    // visit states with work or a request in flight (the front)
	front        int    // required front size
	maxFront     int
	lastWaitNano int64
	popBuf       []byte
	recBuf       []byte // a queue record being built (place)
}

// fill moves ready URLs into their visit states, keeping the front at the
// required size and the RAM of the queues within the workbench budget.
// It moves at most a batch per call, so that the scheduler keeps serving
// fetchers, and reports whether it stopped with more to move.
func (s *scheduler) fill() (more bool) {
	d := &s.dist
	for n := 0; ; n++ {
		if n == 4096 {
			return true
		}
		rec := d.held
		if rec == nil {
			r, ok, err := s.f.cfg.Ready.Pop(d.popBuf[:0])
			if err != nil {
				s.err = fmt.Errorf("frontier: ready queue pop: %w", err)
				return false
			}
			if !ok {
				return false
			}
			d.popBuf = r
			rec = r
			s.f.stats.Ready.Add(-1)
		}
		if !s.place(rec, false) {
			if d.held == nil {
				d.held = append([]byte(nil), rec...)
			}
			return false
		}
		d.held = nil
		if s.err != nil {
			return false
		}
	}
}

// place puts one ready record (meta+URL) in its visit state, creating it
// if needed. Unless force is set, it refuses (returns false, record not
// taken) when that would activate a visit state beyond the required front.
// With the ip policy, a record whose host is not resolved yet is parked on
// the host until the DNS stage answers. A hand-over record's part is
// applied to the visit state (handover.go; not with the ip policy, whose
// keys are addresses).
func (s *scheduler) place(rec []byte, force bool) bool {
	ho, rec, isHO, err := SplitHandover(rec)
	if err != nil {
		s.f.log.Error("frontier: ready record dropped", "err", err)
		return true
	}
	if len(rec) < MetaLen {
		s.f.log.Error("frontier: ready record without meta dropped", "len", len(rec))
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
		h := s.dns.host(hostOf(string(sa)))
		if !h.resolved {
			s.park(h, rec)
			return true
		}
		key, prefixLen, isHO, ho = "ip:"+h.addr.String(), 0, false, Handover{}
		v = s.states[key]
	default:
		key, prefixLen = s.assign.key(sa, url)
		v = s.states[key]
	}
	if !force && (v == nil || !v.active) && s.dist.active >= s.dist.front {
		return false
	}
	switch {
	case v == nil:
		if key == "" {
			key = string(sa)
		}
		if v = s.restoredState(key, prefixLen > 0); v != nil {
			if isHO {
				s.takeHandover(v, s.dns.host(hostOf(string(sa))), ho)
			}
			break
		}
		if isHO {
			s.adopt(s.dns.host(hostOf(string(sa))), ho.Addr)
		}
		// The policies' prefixes are the key or nothing (Assign.key). With
		// the authority policy the key is sa, and a new host's name shares
		// its bytes.
		host := hostOf(key)
		if s.assign.kind != assignAuthority {
			host = hostOf(string(sa))
		}
		v = s.newVisitState(key, prefixLen > 0, host, ho.Gen)
	case isHO:
		s.takeHandover(v, s.dns.host(hostOf(string(sa))), ho)
	}
	if isHO {
		s.takeRobots(string(sa), ho.Robots)
	}
	if v.broken() {
		s.countDrop(v.dropWhy, 1)
		s.drops.one(v.dropWhy, "", string(rec))
		return true
	}
	// The record is meta+suffix: move the meta next to the suffix.
	var r []byte
	if prefixLen < MetaLen {
		r = append(append(s.dist.recBuf[:0], rec[:MetaLen]...), url[prefixLen:]...)
		s.dist.recBuf = r
	} else {
		r = rec[prefixLen:]
		copy(r, rec[:MetaLen])
	}
	if err := s.add(v, r); err != nil {
		s.err = err
	}
	return true
}

// park keeps a record of an unresolved host until the DNS stage answers
// (ip policy), or drops it if the host is dead.
func (s *scheduler) park(h *hostState, rec []byte) {
	if h.dead {
		s.drop(h, "", string(rec))
		return
	}
	w := h.w()
	w.parked = append(w.parked, append([]byte(nil), rec...))
	s.addQueued(1)
	s.dns.ask(h)
}

// add appends a record to v: in RAM while the workbench is within budget
// and nothing of v is on disk, to the virtualizer otherwise (each active
// visit state keeps at least one URL in RAM).
func (s *scheduler) add(v *visitState, rec []byte) error {
	if v.movedTo() != "" && v.host.resolved {
		// The address may have moved on, or back here, since v moved (a
		// death and a return): follow its current owner, never a previous
		// one, or two agents pass the record back and forth.
		if to := s.addrOwner(v.host.addr); to == Self {
			v.setMovedTo("")
			s.attachOrMove(v)
		} else {
			v.setMovedTo(to)
		}
	}
	if v.movedTo() != "" {
		return s.forwardMoved(v, rec, nil)
	}
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
	s.addQueued(1)
	s.activate(v)
	if v.heapIndex < 0 && v.entry != nil && v.phase == phaseReady && int(v.inFlight) < s.wb.parKey {
		s.wb.offer(v)
	}
	return nil
}

// activate counts v in the front.
func (s *scheduler) activate(v *visitState) {
	if !v.active {
		v.active = true
		s.dist.active++
	}
}

// deactivate takes v out of the front.
func (s *scheduler) deactivate(v *visitState) {
	if v.active {
		v.active = false
		s.dist.active--
	}
}

// settle takes an idle visit state (no work, nothing in flight) out of the
// front; with one URL per key it is forgotten altogether, else kept as an
// idle key when it can be (idlekey.go).
func (s *scheduler) settle(v *visitState) {
	s.wb.offer(v)
	if v.hasWork() || v.inFlight > 0 || v.waiting() {
		return
	}
	s.deactivate(v)
	switch {
	case s.assign.oneURLPerKey() && !v.broken():
		delete(s.states, v.key)
		s.dns.unref(v.host)
		if v.entry != nil {
			v.entry.members--
		}
	case s.canIdle(v):
		s.makeIdle(v)
	}
}

// newVisitState makes the visit state of key, which knows of gen
// hand-overs of it (handover.go), and attaches it or has its host resolved.
func (s *scheduler) newVisitState(key string, keyIsPrefix bool, host string, gen uint32) *visitState {
	s.nextID++
	v := &visitState{key: key, keyIsPrefix: keyIsPrefix, id: s.nextID, heapIndex: -1, gen: gen}
	s.states[key] = v
	h := s.dns.host(host)
	s.wakeIdle(v, h)
	v.host = h
	s.dns.ref(h)
	switch {
	case h.resolved:
		s.attach(v)
	case h.dead:
		v.phase, v.dropWhy = phaseBroken, h.dropWhy()
	default:
		s.waitHost(v, h)
	}
	return v
}

// attach puts v in the workbench entry of its host's address.
func (s *scheduler) attach(v *visitState) { s.attachOrMove(v) }

// wake ends the wait of visit states withdrawn for a host or a robots.txt.
func (s *scheduler) wake(list []*visitState) {
	for _, v := range list {
		if v.movedTo() != "" {
			continue
		}
		if v.entry == nil {
			if v.host.resolved {
				s.attach(v)
			}
			continue
		}
		v.setPhase(phaseReady)
		s.wb.offer(v)
	}
}

// adjustFront grows the required front (BUbiNG's requiredFrontSize) when
// fetchers wait for work while the distributor holds URLs back because the
// front is full; it never exceeds what the workbench can hold.
func (s *scheduler) adjustFront() {
	d := &s.dist
	waited := s.f.stats.FetcherWaitNano.Load()
	fetchersWaited := waited > d.lastWaitNano && len(s.f.todo) == 0 && s.pending == nil
	d.lastWaitNano = waited
	if fetchersWaited && d.held != nil && d.front < d.maxFront {
		d.front = min(d.maxFront, d.front+max(16, d.front/8))
	}
}
