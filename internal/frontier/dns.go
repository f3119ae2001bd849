package frontier

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
)

// The DNS stage resolves the host names of visit states (and, with the ip
// policy, of ready records) with a pool of workers. Its state is owned by
// the scheduler goroutine; the workers only see a host's name.
//
// Invariants:
//   - a host is resolving (in backlog or sent to a worker) or waiting for
//     its retry time (in retry, retryAt > 0), never both, and at most once;
//   - a resolved host keeps its address until a refresh (readdress.go,
//     Config.DNSRefresh) answers another, and stays resolved; a dead one
//     (no address, or its address refused by the guard) stays dead, for as
//     long as the stage holds it;
//   - every visit state in a host's waiters is in phase resolving, and
//     every record in its parked list is counted in the queued URLs;
//   - refs is the number of visit states whose host it is (v.host). The
//     stage holds every host with refs > 0 or something going on (resolving,
//     a retry, waiters, parked records), and up to Settings.HostCache others
//     (loose: resolved or dead, nothing waiting). Past that, trim forgets
//     loose ones: no visit state points to them, so the workbench entries
//     (politeness per address) and the address hand-over are untouched; a
//     host met again is resolved again (counted in HostsForgotten, and its
//     resolutions in DNSLookups), unless it is the host of an idle key
//     (idlekey.go), which gives it back the address it had and when that
//     was confirmed.

// hostState is what the DNS stage knows of one host name.
type hostState struct {
	name string
	addr netip.Addr // changed, once resolved, only by scheduler.setAddr

	// A refresh (readdress.go) resolves a resolved host again; addr stays
	// in use until the answer.
	resolvedAt int64     // the frontier's clock: when addr was last confirmed
	wait       *hostWait // nil while nothing waits and no resolution failed
	refs       int32     // visit states whose host it is
	resolved   bool
	resolving  bool
	dead       bool // did not resolve, or its address is refused: its URLs are dropped
	refused    bool
}

// hostWait is what a host holds only while something waits for it, or
// after its resolution failed.
type hostWait struct {
	fails   int
	retryAt int64
	waiters []*visitState // visit states waiting for this resolution
	parked  [][]byte      // ready records waiting for it (ip policy)
}

// w returns h's wait state, making it.
func (h *hostState) w() *hostWait {
	if h.wait == nil {
		h.wait = &hostWait{}
	}
	return h.wait
}

// retryAt is when a failed resolution of h is tried again (0: none).
func (h *hostState) retryAt() int64 {
	if h.wait == nil {
		return 0
	}
	return h.wait.retryAt
}

// fails is the failed resolutions of h.
func (h *hostState) fails() int {
	if h.wait == nil {
		return 0
	}
	return h.wait.fails
}

// parked is the records parked on h.
func (h *hostState) parked() [][]byte {
	if h.wait == nil {
		return nil
	}
	return h.wait.parked
}

// takeWaiters returns the visit states waiting for h and forgets them.
func (h *hostState) takeWaiters() []*visitState {
	if h.wait == nil {
		return nil
	}
	ws := h.wait.waiters
	h.wait.waiters = nil
	h.shrink()
	return ws
}

// takeParked returns the records parked on h and forgets them.
func (h *hostState) takeParked() [][]byte {
	if h.wait == nil {
		return nil
	}
	p := h.wait.parked
	h.wait.parked = nil
	h.shrink()
	return p
}

// shrink drops h's wait state once a resolved host has nothing in it.
func (h *hostState) shrink() {
	if w := h.wait; w != nil && h.resolved && w.retryAt == 0 && len(w.waiters) == 0 && len(w.parked) == 0 {
		h.wait = nil
	}
}

// loose reports whether the stage may forget h.
func (h *hostState) loose() bool {
	return h.refs == 0 && !h.resolving && (h.wait == nil || h.dead && len(h.wait.waiters) == 0 && len(h.wait.parked) == 0)
}

// dropWhy is why a URL of a dead host is dropped.
func (h *hostState) dropWhy() DropReason {
	if h.refused {
		return DropAddress
	}
	return DropDNS
}

// dnsStage is the scheduler's side of the DNS workers.
type dnsStage struct {
	hosts     map[string]*hostState
	loose     int   // hosts held with refs == 0
	maxLoose  int   // Settings.HostCache
	trimAfter int64 // the frontier's clock: no trim before (one found nothing to forget)
	req       chan *hostState
	res       chan dnsResult
	backlog   []*hostState // to send to a worker
	inFlight  int          // sent, not answered
	retry     []*hostState // failed resolutions waiting for their retry time
}

type dnsResult struct {
	host *hostState
	addr netip.Addr
	err  error
}

// defaultHostCache is the DNS stage's size when HostCache is 0 (Settings
// not from the table).
const defaultHostCache = 1 << 14

func newDNSStage(maxLoose int) dnsStage {
	if maxLoose <= 0 {
		maxLoose = defaultHostCache
	}
	return dnsStage{hosts: make(map[string]*hostState), req: make(chan *hostState, 256), res: make(chan dnsResult, 256),
		maxLoose: maxLoose}
}

// host returns the state of a host name, creating it.
func (d *dnsStage) host(name string) *hostState {
	h := d.hosts[name]
	if h == nil {
		h = &hostState{name: name}
		d.hosts[name] = h
		d.loose++
	}
	return h
}

// ref counts one more visit state whose host is h.
func (d *dnsStage) ref(h *hostState) {
	if h.refs == 0 {
		d.loose--
	}
	h.refs++
}

// unref counts one visit state fewer whose host is h (one forgotten).
func (d *dnsStage) unref(h *hostState) {
	h.refs--
	if h.refs == 0 {
		d.loose++
	}
}

// trimScan bounds the hosts one trim looks at.
const trimScan = 1024

// trim forgets loose hosts once more than Settings.HostCache are held, down
// to 7/8 of it, looking at up to trimScan hosts (from the random start of
// a map iteration); it returns how many it forgot. When it finds none to
// forget (the loose hosts are being resolved or waited for), the next one
// waits a tick.
func (d *dnsStage) trim(now int64) int {
	if d.loose <= d.maxLoose || now < d.trimAfter {
		return 0
	}
	target, n, seen := d.maxLoose-d.maxLoose/8, 0, 0
	for name, h := range d.hosts {
		if d.loose <= target || seen >= trimScan {
			break
		}
		seen++
		if h.loose() {
			delete(d.hosts, name)
			d.loose--
			n++
		}
	}
	if n == 0 {
		d.trimAfter = now + int64(tickEvery)
	}
	return n
}

// ask queues h for resolution unless it is resolving or waiting to retry.
func (d *dnsStage) ask(h *hostState) {
	if !h.resolving && h.retryAt() == 0 {
		h.resolving = true
		d.backlog = append(d.backlog, h)
	}
}

// busy reports whether a resolution is queued, going on or to be retried.
func (d *dnsStage) busy() bool {
	return len(d.backlog) > 0 || d.inFlight > 0 || len(d.retry) > 0
}

// out returns the channel and host to send next (nil when there is none).
func (d *dnsStage) out() (chan<- *hostState, *hostState) {
	if len(d.backlog) == 0 {
		return nil, nil
	}
	return d.req, d.backlog[0]
}

// sent records that out's host was taken by a worker.
func (d *dnsStage) sent() {
	d.backlog[0] = nil
	d.backlog = d.backlog[1:]
	d.inFlight++
}

// due moves failed resolutions whose time has come back to the backlog.
func (d *dnsStage) due(now int64) {
	for i := 0; i < len(d.retry); {
		h := d.retry[i]
		if h.wait.retryAt > now {
			i++
			continue
		}
		h.wait.retryAt = 0
		d.ask(h)
		last := len(d.retry) - 1
		d.retry[i], d.retry[last] = d.retry[last], nil
		d.retry = d.retry[:last]
	}
}

// nextRetry is the earliest retry time.
func (d *dnsStage) nextRetry() (t int64, ok bool) {
	for _, h := range d.retry {
		if !ok || h.wait.retryAt < t {
			t, ok = h.wait.retryAt, true
		}
	}
	return t, ok
}

// worker resolves hosts until ctx ends.
func (d *dnsStage) worker(ctx context.Context, r Resolver, guard func(netip.Addr) error) {
	for {
		select {
		case <-ctx.Done():
			return
		case h := <-d.req:
			res := dnsResult{host: h}
			addrs, err := r.Lookup(ctx, h.name)
			switch {
			case err != nil:
				res.err = err
			case len(addrs) == 0:
				res.err = fmt.Errorf("frontier: resolve %s: no addresses", h.name)
			default:
				res.addr = pickAddr(addrs)
				if guard != nil {
					if gerr := guard(res.addr); gerr != nil {
						res.err = &refusedError{gerr}
					}
				}
			}
			select {
			case d.res <- res:
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
func pickAddr(addrs []netip.Addr) netip.Addr { return PickAddr(addrs) }

// PickAddr is the address the frontier dials of a host's addresses: the
// first IPv4 one, else the first. addrs must not be empty.
func PickAddr(addrs []netip.Addr) netip.Addr {
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

// waitHost withdraws v until h is resolved, asking the DNS stage for it.
func (s *scheduler) waitHost(v *visitState, h *hostState) {
	v.setPhase(phaseResolving)
	s.wb.withdraw(v)
	w := h.w()
	w.waiters = append(w.waiters, v)
	s.dns.ask(h)
}

// resolved ends a resolution: the waiting visit states are attached to the
// workbench entry of the address, or the host is retried, or declared dead
// (its visit states purged).
func (s *scheduler) resolved(r dnsResult) {
	h := r.host
	h.resolving = false
	s.dns.inFlight--
	if h.resolved {
		s.refreshed(h, r)
		return
	}
	if r.err != nil {
		s.resolveFailed(h, r.err)
		return
	}
	h.addr, h.resolved, h.resolvedAt = r.addr, true, s.f.now()
	if h.wait != nil {
		h.wait.fails = 0
	}
	s.wake(h.takeWaiters())
	for _, rec := range h.takeParked() {
		s.addQueued(-1)
		s.place(rec, true)
	}
}

// resolveFailed retries a failed resolution, or declares the host dead and
// drops what waits for it.
func (s *scheduler) resolveFailed(h *hostState, err error) {
	f := s.f
	var refused *refusedError
	switch {
	case errors.As(err, &refused):
		h.dead, h.refused = true, true
		f.log.Info("frontier: address refused", "host", h.name, "err", err)
	default:
		w := h.w()
		w.fails++
		if w.fails <= f.cfg.DNSRetries && !isPermanentDNS(err) {
			w.retryAt = later(f.now(), s.set.RetryDelay<<min(w.fails-1, 16))
			s.dns.retry = append(s.dns.retry, h)
			return
		}
		h.dead = true
		f.stats.DNSFailures.Add(1)
		f.log.Info("frontier: name did not resolve", "host", h.name, "err", err)
	}
	for _, rec := range h.takeParked() {
		s.addQueued(-1)
		s.drop(h, "", string(rec))
	}
	for _, v := range h.takeWaiters() {
		if v.host == h {
			s.purge(v, h.dropWhy())
			continue
		}
		v.setPhase(phaseReady)
		s.wb.offer(v)
	}
}
