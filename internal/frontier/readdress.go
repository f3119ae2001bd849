package frontier

import "net/netip"

// Address changes. With Config.DNSRefresh set, a host resolved longer ago
// than DNSRefresh is resolved again when a task of it is made (its URLs go
// on to the address it has meanwhile). When the answer is another address,
// the host takes it at once — every later request dials the new address —
// and each visit state attached to the old address's workbench entry moves
// to the new one the next time it comes up there with no request in
// flight (one in flight withdraws it until it returns):
//
//   - the visit state keeps its next fetch time, so the key's remaining
//     delay (host delay, Crawl-delay, Retry-After, adaptive) holds across
//     the move;
//   - the old entry keeps its next fetch time for its other keys and the
//     new one has its own, so --ip-delay holds on both addresses;
//   - attaching to the new entry asks the Router who owns the new address
//     like any attach: another agent's, and the key is handed over to it
//     (handover.go);
//   - Config.Moved is told, so that no keep-alive connection dialled to the
//     old address carries the key's next request.
//
// A failed refresh keeps the address (and is tried again after
// DNSRefresh). The ip policy, whose keys are addresses, keeps the first
// address of each host.

// refreshDue asks the DNS stage for h again if its resolution is older
// than DNSRefresh.
func (s *scheduler) refreshDue(now int64, h *hostState) {
	every := s.f.cfg.DNSRefresh
	if every <= 0 || s.assign.kind == assignIP || h.resolving || h.retryAt() != 0 || now-h.resolvedAt < int64(every) {
		return
	}
	s.dns.ask(h)
}

// refreshed ends a refresh of h (already resolved): a new address is taken
// at once; a failure or the same address only restarts the wait.
func (s *scheduler) refreshed(h *hostState, r dnsResult) {
	h.resolvedAt = s.f.now()
	if r.err != nil || r.addr == h.addr {
		if r.err != nil {
			s.f.log.Info("frontier: refresh of a name failed; its address is kept", "host", h.name, "addr", h.addr, "err", r.err)
		}
		return
	}
	s.f.log.Info("frontier: address changed", "host", h.name, "old", h.addr, "new", r.addr)
	s.f.stats.AddressChanges.Add(1)
	s.setAddr(h, r.addr)
}

// setAddr gives h, resolved, another address. Every change of a resolved
// host's address goes through it: it marks the workbench entry of the old
// address, the only one whose visit states rehome must check.
func (s *scheduler) setAddr(h *hostState, a netip.Addr) {
	if e := s.wb.byAddr[h.addr]; e != nil {
		e.readdressed = true
	}
	h.addr = a
}

// rehome moves v, which came up in entry e, to the entry of its host's
// address if that is not e, and reports whether v left e's heap: moved
// (nothing in flight) or withdrawn until its requests return. A visit
// state is attached at its host's address, so only an entry a host has
// left (setAddr) can hold one to move.
func (s *scheduler) rehome(v *visitState, e *ipEntry) bool {
	if !e.readdressed || v.host == nil || !v.host.resolved || v.host.addr == e.addr || s.assign.kind == assignIP {
		return false
	}
	s.wb.withdraw(v)
	if v.inFlight > 0 {
		return true // settle offers it to e again once its requests are back
	}
	e.members--
	v.entry = nil
	s.attach(v)
	if f := s.f.cfg.Moved; f != nil {
		f(v.host.name, e.addr, v.host.addr)
	}
	return true
}
