package cluster

import (
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
)

// Placements is a key owner's memory of the address it first placed each
// host at: the owner sends the URLs its sieve finds new to the owner of
// that address, which holds the host's keys (design (a) of the per-address
// politeness), and goes on doing so whatever its resolver answers later.
// When the host's address changes, the holder notices it (its own refresh),
// hands the keys over to the new address's owner and forwards every later
// URL to it (frontier's hand-over records), so that the holder stays the
// one place the keys' URLs pass through and two agents never hold one key.
//
// It is bounded: past MaxPlacements hosts an arbitrary one is forgotten
// (counted in Evicted), and its next URL is placed by a fresh resolution.
// One opened with OpenPlacements is durable (placementlog.go): a restarted
// agent places each host where it did before. Safe for concurrent use.
// The zero value is not usable; call NewPlacements or OpenPlacements.
type Placements struct {
	mu      sync.Mutex
	m       map[uint64]netip.Addr // by the xxhash of the host name
	max     int
	evicted atomic.Int64
	log     *placementLog // nil: in RAM only
}

// MaxPlacements is how many hosts a Placements keeps by default (about
// 50 bytes each).
const MaxPlacements = 1 << 21

// NewPlacements returns an empty Placements keeping at most max hosts
// (MaxPlacements when max ≤ 0).
func NewPlacements(max int) *Placements {
	if max <= 0 {
		max = MaxPlacements
	}
	return &Placements{m: make(map[uint64]netip.Addr), max: max}
}

// Get returns the address host was placed at, if it is kept.
func (p *Placements) Get(host string) (netip.Addr, bool) {
	return p.get(xxhash.Sum64String(host))
}

// GetBytes is Get of a host name spelt in a byte slice; it allocates
// nothing.
func (p *Placements) GetBytes(host []byte) (netip.Addr, bool) {
	return p.get(xxhash.Sum64(host))
}

func (p *Placements) get(h uint64) (netip.Addr, bool) {
	p.mu.Lock()
	a, ok := p.m[h]
	p.mu.Unlock()
	return a, ok
}

// Keep places host at a unless it is placed already, and returns the
// address it is placed at.
func (p *Placements) Keep(host string, a netip.Addr) netip.Addr {
	h := xxhash.Sum64String(host)
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.m[h]; ok {
		return old
	}
	if p.put(h, a) {
		p.evicted.Add(1)
	}
	if p.log != nil {
		p.log.add(h, a, p.m)
	}
	return a
}

// put places the host of hash h at a, forgetting an arbitrary other host
// if the bound is reached (reported); p.mu held.
func (p *Placements) put(h uint64, a netip.Addr) (evicted bool) {
	if _, ok := p.m[h]; !ok && len(p.m) >= p.max {
		for k := range p.m {
			delete(p.m, k)
			evicted = true
			break
		}
	}
	p.m[h] = a
	return evicted
}

// Len returns how many hosts are kept.
func (p *Placements) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}

// Evicted returns how many hosts were forgotten to keep the bound.
func (p *Placements) Evicted() int64 { return p.evicted.Load() }
