package frontier

import (
	"context"
	"net/netip"
	"time"
)

// Read-only inspection for the console and `petrel why`. Every answer is
// computed on the scheduler goroutine, like a checkpoint, so it is one
// consistent view; none changes anything.

// DelayReason says which rule set a key's delay.
type DelayReason uint8

const (
	DelayHost          DelayReason = iota // HostDelay
	DelayAdaptive                         // DelayFactor × the last fetch's duration
	DelayCrawlDelay                       // robots.txt Crawl-delay (up to CrawlDelayCap)
	DelayRetryAfter                       // a Retry-After header (up to MaxDelay)
	DelayRetry                            // RetryDelay before a retry
	DelayRobotsBackoff                    // robots.txt unavailable: backoff before asking again
	DelayHostDown                         // the host unreachable: a growing wait (hostdown.go)
)

func (r DelayReason) String() string {
	switch r {
	case DelayAdaptive:
		return "adaptive"
	case DelayCrawlDelay:
		return "crawl-delay"
	case DelayRetryAfter:
		return "retry-after"
	case DelayRetry:
		return "retry-delay"
	case DelayRobotsBackoff:
		return "robots-backoff"
	case DelayHostDown:
		return "host-down"
	}
	return "host-delay"
}

// Place is where a URL is in the frontier.
type Place uint8

const (
	// NotHeld: the frontier does not hold the URL now. It was never
	// enqueued, was refused, is done, or is among the keys the sieve has
	// not flushed yet (URLInfo.SieveUnflushed says how many there are: the
	// sieve cannot be asked about one).
	NotHeld     Place = iota
	InReady           // in the ready queue: out of the sieve, waiting for its visit state
	Held              // taken from the ready queue, waiting for room in the front
	ParkedDNS         // waiting for its host's address (ip policy)
	Queued            // in its visit state's queue (RAM, or retries)
	Virtualized       // in its visit state's queue, on disk
	InFlight          // handed to a fetcher
	Parsing           // fetched, its links not all enqueued yet
)

func (p Place) String() string {
	return [...]string{"not held", "ready queue", "held by the distributor", "parked for DNS",
		"queued", "virtualized", "in flight", "parsing"}[p]
}

// URLInfo is where one URL is (Where).
type URLInfo struct {
	URL      string
	Place    Place
	Meta     Meta // when held (not for NotHeld)
	Attempt  int  // retries so far, for a URL queued again after a failure
	Position int64
	// Position is the URL's index in its visit state's queue (retries
	// first, then RAM, then disk), from 0 = next.
	Key            *KeyInfo // its visit state, when it has one
	SieveUnflushed int64    // keys enqueued in the sieve and not yet flushed
}

// KeyInfo is the state of one politeness key (a visit state).
type KeyInfo struct {
	Key         string
	Host        string
	Queued      int64 // URLs it holds (RAM, retries, disk)
	OnDisk      int64 // of which virtualized
	InFlight    int
	Pages       int64     // page fetches dispatched since the frontier started (authority policy)
	NextFetch   time.Time // earliest start of its next request (zero: now)
	Delay       time.Duration
	DelayWhy    DelayReason // the rule behind Delay, set by the last response
	Addr        netip.Addr  // its workbench entry's address (invalid until resolved)
	IPNextFetch time.Time   // earliest next request to Addr (zero: now)
	IPInFlight  int
	Waiting     string     // "dns", "robots.txt" or ""
	Broken      bool       // purged: its URLs are dropped
	DropWhy     DropReason // why it was purged (Broken)
	Failures    int        // consecutive failed URLs
	// Down is how long its host has been unreachable, from the end of the
	// first failed try to the last (zero: it answers); DownTries the
	// tries that found it so (hostdown.go).
	Down      time.Duration
	DownTries int
}

// HostInfo is the state of one host name.
type HostInfo struct {
	Host     string
	Known    bool // the frontier has met the host
	Resolved bool
	Addr     netip.Addr
	Dead     bool // did not resolve, or its address is refused
	Refused  bool
	DNSFails int
	Parked   int       // records waiting for its address (ip policy)
	Keys     []KeyInfo // the visit states whose host it is
	Budget   map[string]int64
	// Budget is the URLs admitted per scheme+authority of the host (the
	// per-key budget used), for the authorities it has keys for.
	Robots map[string]RobotsInfo // per scheme+authority
}

// RobotsInfo is the robots.txt state of one scheme+authority.
type RobotsInfo struct {
	Fetched  bool      // rules in force
	Expires  time.Time // when they are fetched again
	InFlight bool
	Failures int
	Dead     bool // unavailable after every retry: the authority's URLs are dropped
}

// ReadyScanner is implemented by a ReadyQueue that can list its records
// without consuming them (diskq.Queue); Where uses it.
type ReadyScanner interface {
	Scan(fn func(rec []byte) bool) error
}

// VirtualPeeker is implemented by a Virtualizer that can list one id's
// records without consuming them (diskq.Queues); Where uses it.
type VirtualPeeker interface {
	Peek(id uint64) ([][]byte, error)
}

// Where says where url (an absolute URL as urlx.URL.String spells it) is.
// It looks in the scheduler's state, then scans the ready queue outside the
// scheduler (which goes on meanwhile), then looks in the scheduler's state
// again, since a URL only moves forward (sieve, ready queue, visit state,
// fetcher): a URL found in none was not held at the moment of the look
// that missed it.
func (f *Frontier) Where(ctx context.Context, url string) (URLInfo, error) {
	var info URLInfo
	look := func() error { return f.do(ctx, func(s *scheduler) { info = s.where(url) }) }
	if err := look(); err != nil || info.Place != NotHeld {
		return info, err
	}
	if sc, ok := f.cfg.Ready.(ReadyScanner); ok {
		found := false
		err := sc.Scan(func(rec []byte) bool {
			if rec = ReadyRecord(rec); len(rec) >= MetaLen && string(rec[MetaLen:]) == url {
				info.Meta, found = decodeMeta(rec), true
				return false
			}
			return ctx.Err() == nil
		})
		if err != nil {
			return info, err
		}
		if found {
			info.Place = InReady
			info.URL = url
			return info, ctx.Err()
		}
	}
	return info, look()
}

// where looks for url in the scheduler's state.
func (s *scheduler) where(url string) URLInfo {
	f := s.f
	info := URLInfo{URL: url, SieveUnflushed: max(0, f.sieveIn.Load()-f.sieveFlushed.Load())}
	for t := range s.flying {
		if !t.Robots && t.URL() == url {
			info.Place, info.Meta, info.Attempt, info.Key = InFlight, t.Meta, t.Attempt, s.keyInfo(t.vs)
			return info
		}
	}
	f.parsingMu.Lock()
	for t := range f.parsing {
		if !t.Robots && t.URL() == url {
			info.Place, info.Meta, info.Attempt = Parsing, t.Meta, t.Attempt
		}
	}
	f.parsingMu.Unlock()
	if info.Place != NotHeld {
		return info
	}
	if held := ReadyRecord(s.dist.held); len(held) >= MetaLen && string(held[MetaLen:]) == url {
		info.Place, info.Meta = Held, decodeMeta(held)
		return info
	}
	sa := string(schemeAuthorityOf([]byte(url)))
	h := s.dns.hosts[hostOf(sa)]
	if h != nil {
		for _, rec := range h.parked() {
			if string(rec[MetaLen:]) == url {
				info.Place, info.Meta = ParkedDNS, decodeMeta(rec)
				return info
			}
		}
	}
	v := s.stateOf(sa, url, h)
	if v == nil || len(url) < len(v.prefix()) || url[:len(v.prefix())] != v.prefix() {
		return info
	}
	s.findInState(v, url[len(v.prefix()):], &info)
	if info.Place != NotHeld {
		info.Key = s.keyInfo(v)
	}
	return info
}

// stateOf returns the visit state url would be queued in, if it exists.
func (s *scheduler) stateOf(sa, url string, h *hostState) *visitState {
	switch s.assign.kind {
	case assignAuthority:
		return s.states[sa]
	case assignIP:
		if h == nil || !h.resolved {
			return nil
		}
		return s.states["ip:"+h.addr.String()]
	}
	key, _ := s.assign.key([]byte(sa), []byte(url))
	return s.states[key]
}

// findInState looks for the record of suffix in v's retries, RAM queue and
// virtualized tail, in dispatch order.
func (s *scheduler) findInState(v *visitState, suffix string, info *URLInfo) {
	var pos int64
	for _, r := range v.retries() {
		if r.rec[MetaLen:] == suffix {
			info.Place, info.Meta, info.Attempt, info.Position = Queued, decodeMeta(r.rec), r.attempt, pos
			return
		}
		pos++
	}
	found := false
	v.queue.each(func(r []byte) {
		if !found && string(r[MetaLen:]) == suffix {
			info.Place, info.Meta, info.Position, found = Queued, decodeMeta(r), pos, true
		}
		if !found {
			pos++
		}
	})
	if found || v.onDisk == 0 {
		return
	}
	p, ok := s.f.cfg.Virtualizer.(VirtualPeeker)
	if !ok {
		return
	}
	recs, err := p.Peek(v.id)
	if err != nil {
		s.f.log.Warn("frontier: inspect virtualized queue", "key", v.key, "err", err)
		return
	}
	for _, r := range recs {
		if string(r[MetaLen:]) == suffix {
			info.Place, info.Meta, info.Position = Virtualized, decodeMeta(r), pos
			return
		}
		pos++
	}
}

// keyInfo describes v.
func (s *scheduler) keyInfo(v *visitState) *KeyInfo {
	k := &KeyInfo{Key: v.key, Host: v.host.name, Queued: v.queued(), OnDisk: v.onDisk, InFlight: int(v.inFlight),
		Pages: v.pages, NextFetch: s.f.wall(v.nextFetch), Delay: v.delay, DelayWhy: v.delayWhy,
		Broken: v.broken(), DropWhy: v.dropWhy, Failures: int(v.failures)}
	if e := v.entry; e != nil {
		k.Addr, k.IPNextFetch, k.IPInFlight = e.addr, s.f.wall(e.nextFetch), e.inFlight
	}
	if o := v.outage(); o != nil {
		k.Down, k.DownTries = time.Duration(o.last-o.since), int(o.tries)
	}
	switch v.phase {
	case phaseResolving:
		k.Waiting = "dns"
	case phaseRobots:
		k.Waiting = "robots.txt"
	}
	return k
}

// wall converts the frontier's clock to a wall time; times not after the
// frontier's start (nothing to wait for) are the zero Time.
func (f *Frontier) wall(t int64) time.Time {
	if t <= 0 {
		return time.Time{}
	}
	return f.base.Add(time.Duration(t))
}

// Host describes what the frontier knows of a host name: its DNS state,
// its visit states, their robots.txt and the per-key budget used.
func (f *Frontier) Host(ctx context.Context, host string) (HostInfo, error) {
	var info HostInfo
	err := f.do(ctx, func(s *scheduler) { info = s.hostInfo(host) })
	for sa := range info.Budget {
		info.Budget[sa] = f.counts.get([]byte(sa))
	}
	return info, err
}

func (s *scheduler) hostInfo(name string) HostInfo {
	info := HostInfo{Host: name, Budget: map[string]int64{}, Robots: map[string]RobotsInfo{}}
	// The robots.txt of a host whose keys are idle (KeyQueue brings it
	// back to RAM) is held whether or not the DNS stage still holds it.
	if h := s.dns.hosts[name]; h != nil {
		info.Known, info.Resolved, info.Addr, info.Dead, info.Refused = true, h.resolved, h.addr, h.dead, h.refused
		info.DNSFails, info.Parked = h.fails(), len(h.parked())
		for _, v := range s.states {
			if v.host == h {
				info.Keys = append(info.Keys, *s.keyInfo(v))
				if s.assign.kind == assignAuthority {
					info.Budget[v.key] = 0
					s.robots.lookup(v.key) // back in RAM if it is in the store
				}
			}
		}
	}
	for sa, rs := range s.robots.m {
		if hostOf(sa) == name {
			info.Budget[sa] = 0
			info.Robots[sa] = RobotsInfo{Fetched: rs.rules != nil, Expires: s.f.wall(rs.expires(s.set)), InFlight: rs.inFlight,
				Failures: int(rs.fails), Dead: rs.dead}
		}
	}
	return info
}
