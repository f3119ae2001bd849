package frontier

import (
	"hash/maphash"
	"math"
	"net/netip"
	"strings"
	"time"
)

// Idle keys. Most politeness keys of a large crawl are idle most of the
// time: no URL in RAM or on disk, nothing in flight, waiting for nothing.
// A visit state that settles so (settle) leaves the map of visit states
// for the map of idle keys, keyed by a 64-bit hash of its key (the
// scheduler's seed: it is never saved), as an idleKey of 32 bytes holding
// what must outlive it: its next fetch time and the delay that set it,
// the key's budget used, its consecutive failures and where its host
// was. Its host is no longer referenced, so the DNS stage keeps it only
// within Settings.HostCache. The first record that reaches the
// distributor for the key makes its visit state again (newVisitState):
// with its next fetch time, so the key's delay holds across the idle
// period, and, with the authority policy (whose keys are one host), its
// host at the address it had, confirmed when it was (a host the DNS
// stage still holds keeps its own state). The workbench entry of the
// address, never forgotten, keeps the IP delay.
//
// Invariants:
//   - a key is a visit state or an idle key, never both;
//   - an idle key was a visit state in phase ready, attached to an entry,
//     with nothing queued, in flight or retried, not moved, not broken and
//     knowing of no hand-over (gen 0): what a checkpoint or a clean stop
//     saves of such a visit state (its URLs, its hand-over state) is
//     nothing, so neither saves idle keys, and a restore makes visit
//     states anew as for keys never met;
//   - a view change (MoveOut) counts an idle key of an address given up in
//     that address's wait; its next record makes a visit state that is
//     handed over like any other attached to an address another agent owns;
//   - a raised host delay or Crawl-delay cap (reconfigure) moves an idle
//     key's next fetch time as it moves a visit state's, with the
//     Crawl-delay its robots.txt gave when it went idle (its delay kept in
//     ms rounded down, the move is never shorter).
//
// Two keys whose hashes collide share one idle key: the second takes the
// first's next fetch time and budget used (about 3·10^-8 for 10^6 keys).
type idleKey struct {
	nextFetch int64       // the frontier's clock
	delayMs   uint32      // the delay set by the last release, in ms, rounded down
	crawlMs   uint32      // the Crawl-delay of its robots.txt, uncapped, in ms (authority policy)
	pages     uint32      // page fetches dispatched (authority policy), saturated
	entry     uint32      // 1 + the index of its host's workbench entry
	resolvedS uint32      // seconds of the frontier's clock: its host's last resolution, rounded down
	failures  uint16      // consecutive failed URLs, saturated
	delayWhy  DelayReason // why the delay
	_         uint8
}

// idleKeyBytes is the size of an idleKey (hostbytes_test checks it).
const idleKeyBytes = 32

func (k *idleKey) delay() time.Duration { return time.Duration(k.delayMs) * time.Millisecond }

func sat32(n int64) uint32 { return uint32(min(max(n, 0), math.MaxUint32)) }

// idleHash is the idle-key hash of key.
func (s *scheduler) idleHash(key string) uint64 { return maphash.String(s.idleSeed, key) }

// canIdle reports whether v may become an idle key.
func (s *scheduler) canIdle(v *visitState) bool {
	return v.gen == 0 && v.rare == nil && v.phase == phaseReady && v.entry != nil && !v.active &&
		v.inFlight == 0 && v.heapIndex < 0 && !v.hasWork() && v.host != nil && v.host.resolved
}

// makeIdle turns v, which canIdle, into an idle key, forgetting it.
func (s *scheduler) makeIdle(v *visitState) {
	h := v.host
	k := idleKey{nextFetch: v.nextFetch, delayMs: sat32(int64(v.delay / time.Millisecond)), pages: sat32(v.pages),
		entry: s.wb.entryFor(h.addr).idx + 1, resolvedS: sat32(h.resolvedAt / int64(time.Second)),
		failures: uint16(min(max(v.failures, 0), math.MaxUint16)), delayWhy: v.delayWhy}
	if s.assign.kind == assignAuthority {
		if rs := s.robots.m[v.key]; rs != nil && rs.rules != nil {
			k.crawlMs = sat32(int64(rs.rules.CrawlDelay() / time.Millisecond))
		}
	}
	delete(s.states, v.key)
	s.idleKeys[s.idleHash(v.key)] = k
	s.dns.unref(h)
	v.entry.members--
	v.entry = nil
}

// wakeIdle gives v, just made for key, what key's idle key kept, if it
// has one, and forgets the idle key: v's host h takes the address it had
// unless the DNS stage knows something of h (authority policy).
func (s *scheduler) wakeIdle(v *visitState, h *hostState) {
	if len(s.idleKeys) == 0 {
		return
	}
	hash := s.idleHash(v.key)
	k, ok := s.idleKeys[hash]
	if !ok {
		return
	}
	delete(s.idleKeys, hash)
	v.nextFetch, v.delay, v.delayWhy = k.nextFetch, k.delay(), k.delayWhy
	v.pages, v.failures = int64(k.pages), int32(k.failures)
	fresh := !h.resolved && !h.resolving && !h.dead && h.wait == nil
	if s.assign.kind == assignAuthority && fresh && k.entry > 0 {
		h.addr, h.resolved = s.wb.all[k.entry-1].addr, true
		h.resolvedAt = int64(k.resolvedS) * int64(time.Second)
	}
}

// idleWaits raises waits (MoveOut's) by the remaining delays of the idle
// keys whose host's entry is gone.
func (s *scheduler) idleWaits(gone map[*ipEntry]bool, now int64, waits map[netip.Addr]time.Duration) {
	if len(gone) == 0 {
		return
	}
	for _, k := range s.idleKeys {
		if e := s.wb.all[k.entry-1]; gone[e] {
			if d := time.Duration(k.nextFetch - now); d > waits[e.addr] {
				waits[e.addr] = d
			}
		}
	}
}

// raiseIdleDelays moves the idle keys' next fetch times as reconfigure
// moves the visit states' for a raised host delay or Crawl-delay cap.
func (s *scheduler) raiseIdleDelays(set *liveSettings) {
	for hash, k := range s.idleKeys {
		d, why := set.HostDelay, DelayHost
		if cd := min(time.Duration(k.crawlMs)*time.Millisecond, set.CrawlDelayCap); cd > d {
			d, why = cd, DelayCrawlDelay
		}
		if k.delay() < d && k.nextFetch > 0 {
			k.nextFetch = later(k.nextFetch, d-k.delay())
			k.delayMs, k.delayWhy = sat32(int64(d/time.Millisecond)), why
			s.idleKeys[hash] = k
		}
	}
}

// lowerIdleDelays shortens the idle keys' waits as lowerWaits the visit
// states'. An idle key keeps its delay in whole milliseconds, rounded
// down, so its wait moves back by at most the true decrease.
func (s *scheduler) lowerIdleDelays(now int64) {
	for hash, k := range s.idleKeys {
		crawl := min(time.Duration(k.crawlMs)*time.Millisecond, s.set.CrawlDelayCap)
		if d := delayUnder(s.set, k.delay(), k.delayWhy, crawl); d < k.delay() && k.nextFetch > 0 {
			k.nextFetch = shorter(k.nextFetch, k.delay()-d, now, d)
			k.delayMs = sat32(int64(d / time.Millisecond))
			s.idleKeys[hash] = k
		}
	}
}

// idleInfo describes key if it is an idle key.
func (s *scheduler) idleInfo(key string) (*KeyInfo, bool) {
	k, ok := s.idleKeys[s.idleHash(key)]
	if !ok {
		return nil, false
	}
	e := s.wb.all[k.entry-1]
	info := &KeyInfo{Key: key, Pages: int64(k.pages), NextFetch: s.f.wall(k.nextFetch), Delay: k.delay(), DelayWhy: k.delayWhy,
		Failures: int(k.failures), Addr: e.addr, IPNextFetch: s.f.wall(e.nextFetch), IPInFlight: e.inFlight}
	if s.assign.kind == assignAuthority {
		info.Host = hostOf(key)
	}
	return info, true
}

// idleKeyNamed finds the idle key name names (a key, or with the authority
// policy an authority or host name of the http or https scheme).
func (s *scheduler) idleKeyNamed(name string) (*KeyInfo, bool) {
	if k, ok := s.idleInfo(name); ok {
		return k, true
	}
	if s.assign.kind != assignAuthority {
		return nil, false
	}
	want := strings.ToLower(name)
	for _, scheme := range []string{"http://", "https://"} {
		if k, ok := s.idleInfo(scheme + want); ok {
			return k, true
		}
	}
	return nil, false
}
