package fetch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// ErrNoSuchHost is returned (wrapped) by [Resolver.Lookup] when a name has no
// address.
var ErrNoSuchHost = errors.New("no such host")

// ErrSpecialUseName is returned (wrapped) by [Resolver.Lookup] for a special-use
// name (RFC 6761) that is not in the hosts map. Such names are never sent to
// DNS.
var ErrSpecialUseName = errors.New("special-use name not in hosts map")

// ParseHostsFile parses a hosts file: lines of the form "IP name [name...]",
// with '#' starting a comment. Names are lower-cased and stripped of a
// trailing dot; a name listed on several lines gets all their addresses, in
// order of appearance. An error names the offending line.
func ParseHostsFile(r io.Reader) (map[string][]netip.Addr, error) {
	hosts := make(map[string][]netip.Addr)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64*1024)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		if len(fields) < 2 {
			return nil, fmt.Errorf("fetch: hosts file line %d: want \"IP name [name...]\", got %q", line, strings.TrimSpace(text))
		}
		addr, err := netip.ParseAddr(fields[0])
		if err != nil {
			return nil, fmt.Errorf("fetch: hosts file line %d: bad address %q: %w", line, fields[0], err)
		}
		for _, name := range fields[1:] {
			n := canonicalName(name)
			if n == "" || strings.ContainsAny(n, "/:[]@") {
				return nil, fmt.Errorf("fetch: hosts file line %d: bad name %q", line, name)
			}
			if !containsAddr(hosts[n], addr) {
				hosts[n] = append(hosts[n], addr)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("fetch: hosts file line %d: %w", line+1, err)
	}
	return hosts, nil
}

func containsAddr(list []netip.Addr, a netip.Addr) bool {
	for _, b := range list {
		if a == b {
			return true
		}
	}
	return false
}

// canonicalName lower-cases a host name and removes one trailing dot.
func canonicalName(host string) string {
	host = strings.ToLower(strings.TrimSpace(host))
	return strings.TrimSuffix(host, ".")
}

// IsSpecialUseName reports whether host (already lower-cased or not) is a
// special-use name that must never be sent to DNS: "localhost" and names
// under .localhost, .test, .invalid, .example (RFC 6761) or .onion (RFC 7686).
func IsSpecialUseName(host string) bool {
	h := canonicalName(host)
	for _, tld := range [...]string{"localhost", "test", "invalid", "example", "onion"} {
		if h == tld || strings.HasSuffix(h, "."+tld) {
			return true
		}
	}
	return false
}

// ResolverOptions configures a [Resolver]. Zero fields take the defaults
// given in their comments.
type ResolverOptions struct {
	Hosts       map[string][]netip.Addr // consulted first (names lower-cased)
	System      bool                    // use the system resolver for names not in Hosts (never for special-use names)
	TTL         time.Duration           // the longest a positive answer is kept (default 1h); a shorter DNS TTL wins
	NegativeTTL time.Duration           // the longest a "no such host" is kept (default 5m); a shorter SOA minimum wins
	MinTTL      time.Duration           // the shortest an answer is kept, whatever its DNS TTL (default 10s)
	Timeout     time.Duration           // per lookup (default 10s)
	MaxEntries  int                     // bounded cache (default 100000)
	// Server, when set ("IP:port"), is the DNS server the system path
	// asks (over UDP, falling back to TCP) instead of the machine's
	// resolv.conf servers: --dns-server, and the tests' DNS on loopback.
	// A Server on a loopback address is also asked for special-use names
	// (it is the synthetic web's own name server or a test's); special-use
	// names never reach any other server.
	Server string
}

// A Resolver maps host names to addresses: IP literals map to themselves,
// then the hosts map is consulted, then (if enabled) the system resolver,
// whose answers are cached. A Resolver is safe for concurrent use;
// concurrent lookups of one name share a single query.
type Resolver struct {
	hosts   map[string][]netip.Addr
	system  bool
	local   bool // Server is on loopback: special-use names may be asked of it
	ttl     time.Duration
	negTTL  time.Duration
	minTTL  time.Duration
	timeout time.Duration
	max     int
	lookup  func(ctx context.Context, host string) ([]netip.Addr, error)
	now     func() time.Time

	group singleflight.Group
	notes ttlNotes // TTLs of the answers of the system lookups in flight

	mu    sync.Mutex
	cache map[string]cacheEntry
}

type cacheEntry struct {
	addrs   []netip.Addr // nil for a negative entry
	expires time.Time
}

// NewResolver returns a Resolver configured by opts. The hosts map is copied.
func NewResolver(opts ResolverOptions) *Resolver {
	r := &Resolver{
		hosts:   make(map[string][]netip.Addr, len(opts.Hosts)),
		system:  opts.System,
		ttl:     opts.TTL,
		negTTL:  opts.NegativeTTL,
		minTTL:  opts.MinTTL,
		timeout: opts.Timeout,
		max:     opts.MaxEntries,
		now:     time.Now,
		cache:   make(map[string]cacheEntry),
	}
	for name, addrs := range opts.Hosts {
		n := canonicalName(name)
		r.hosts[n] = append(r.hosts[n], addrs...)
	}
	if r.ttl <= 0 {
		r.ttl = time.Hour
	}
	if r.negTTL <= 0 {
		r.negTTL = 5 * time.Minute
	}
	if r.timeout <= 0 {
		r.timeout = 10 * time.Second
	}
	if r.minTTL <= 0 {
		r.minTTL = 10 * time.Second
	}
	if r.max <= 0 {
		r.max = 100000
	}
	// Go's own resolver (resolv.conf, /etc/hosts, search domains), its
	// UDP answers read through noteTTLs so that their TTLs are kept.
	var d net.Dialer
	dial := d.DialContext
	if opts.Server != "" {
		server := opts.Server
		if ap, err := netip.ParseAddrPort(server); err == nil && ap.Addr().IsLoopback() {
			r.local = true
		}
		dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, server)
		}
	}
	sys := &net.Resolver{PreferGo: true, Dial: noteTTLs(dial, &r.notes)}
	r.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
		return sys.LookupNetIP(ctx, "ip", host)
	}
	return r
}

// Lookup returns the addresses of host. IP literals (bracketed or not) return
// themselves. Special-use names resolve only through the hosts map or a
// loopback Server, failing at once with [ErrSpecialUseName] otherwise. Other names not in the hosts map
// go to the system resolver when enabled, else fail with [ErrNoSuchHost].
// System answers, positive and "not found", are cached for their DNS TTL
// (the least of the records read over UDP; an SOA's minimum for "not
// found"), kept within [MinTTL, TTL] ([MinTTL, NegativeTTL]), or for
// TTL (NegativeTTL) when none was read (an answer from /etc/hosts or over
// TCP).
//
// The returned slice must not be modified.
func (r *Resolver) Lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	h := canonicalName(host)
	if a, ok := addrLiteral(h); ok {
		return []netip.Addr{a.Unmap()}, nil
	}
	if h == "" {
		return nil, fmt.Errorf("fetch: lookup: empty host: %w", ErrNoSuchHost)
	}
	if addrs, ok := r.hosts[h]; ok && len(addrs) > 0 {
		return addrs, nil
	}
	if IsSpecialUseName(h) && !(r.local && r.system) {
		return nil, fmt.Errorf("fetch: lookup %s: %w", h, ErrSpecialUseName)
	}
	if !r.system {
		return nil, fmt.Errorf("fetch: lookup %s: not in hosts map: %w", h, ErrNoSuchHost)
	}
	if addrs, err, ok := r.cached(h); ok {
		return addrs, err
	}
	ch := r.group.DoChan(h, func() (any, error) {
		// The query runs on its own deadline so that one caller's
		// cancellation does not fail the others sharing it.
		qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.timeout)
		defer cancel()
		r.notes.start(h)
		addrs, err := r.lookup(qctx, h)
		ttl, noted := r.notes.take(h)
		now := r.now()
		switch {
		case err == nil && len(addrs) > 0:
			for i := range addrs {
				addrs[i] = addrs[i].Unmap()
			}
			r.store(h, cacheEntry{addrs: addrs, expires: now.Add(r.keep(ttl, noted, r.ttl))})
			return addrs, nil
		case err == nil || isNotFound(err):
			r.store(h, cacheEntry{expires: now.Add(r.keep(ttl, noted, r.negTTL))})
			return nil, fmt.Errorf("fetch: lookup %s: %w", h, ErrNoSuchHost)
		default:
			return nil, fmt.Errorf("fetch: lookup %s: %w", h, err)
		}
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.([]netip.Addr), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("fetch: lookup %s: %w", h, ctx.Err())
	}
}

// keep is how long an answer is cached: its DNS TTL (noted: one was read)
// within [minTTL, most], else most.
func (r *Resolver) keep(ttl time.Duration, noted bool, most time.Duration) time.Duration {
	if !noted {
		return most
	}
	return min(max(ttl, r.minTTL), most)
}

// addrLiteral parses h as an IP literal (bracketed or not). Only a name
// that could be one is parsed (an IPv4 address ends in a digit, an IPv6
// one holds a colon; no top-level domain is numeric), sparing a host
// name's lookup the parse error's allocation.
func addrLiteral(h string) (netip.Addr, bool) {
	lit := strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if lit == "" || (lit[len(lit)-1] > '9' || lit[len(lit)-1] < '0') && strings.IndexByte(lit, ':') < 0 {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(lit)
	return a, err == nil
}

func isNotFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}

func (r *Resolver) cached(h string) ([]netip.Addr, error, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.cache[h]
	if !ok {
		return nil, nil, false
	}
	if !r.now().Before(e.expires) {
		delete(r.cache, h)
		return nil, nil, false
	}
	if e.addrs == nil {
		return nil, fmt.Errorf("fetch: lookup %s: %w (cached)", h, ErrNoSuchHost), true
	}
	return e.addrs, nil, true
}

func (r *Resolver) store(h string, e cacheEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.cache[h]; !ok && len(r.cache) >= r.max {
		// Evict: expired entries first (scanning a bounded number),
		// else an arbitrary one.
		now := r.now()
		evicted, scanned := false, 0
		var victim string
		for k, v := range r.cache {
			if !now.Before(v.expires) {
				delete(r.cache, k)
				evicted = true
			}
			victim = k
			if scanned++; scanned >= 64 {
				break
			}
		}
		if !evicted {
			delete(r.cache, victim)
		}
	}
	r.cache[h] = e
}

// Len reports the number of entries in the cache.
func (r *Resolver) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.cache)
}
