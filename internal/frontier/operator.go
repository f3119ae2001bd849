package frontier

import (
	"context"
	"net/netip"
	"strings"

	"github.com/petrel-crawler/petrel/internal/topn"
)

// What the operator's console asks of the frontier beyond Where and Host:
// the busiest keys, one key's first queued URLs, the robots.txt rule that
// decides a URL, and dropping the keys the blocklist names. Like Where,
// each is answered on the scheduler goroutine.

// sampleURLs bounds the URLs KeyQueue returns from each part of a queue.
const sampleURLs = 10

// Keys returns up to limit visit states, those holding most URLs first
// (ties by key); idle keys (idlekey.go), which hold none, are not listed. It costs O(states · log limit) on the scheduler
// goroutine: the states are not sorted, the limit greatest kept.
func (f *Frontier) Keys(ctx context.Context, limit int) ([]KeyInfo, error) {
	var out []KeyInfo
	err := f.do(ctx, func(s *scheduler) {
		top := topn.New(limit, func(a, b *visitState) bool {
			if qa, qb := a.queued(), b.queued(); qa != qb {
				return qa < qb
			}
			return a.key > b.key
		})
		for _, v := range s.states {
			top.Push(v)
		}
		for _, v := range top.Sorted() {
			out = append(out, *s.keyInfo(v))
		}
	})
	return out, err
}

// KeyQueue describes the visit state of a politeness key (name may also be
// its authority, host:port, or its host name) with the first URLs of its
// queue in RAM (retries first) and on disk, up to sampleURLs each, and the
// URLs admitted for it (the per-key budget used). ok is false when no
// visit state or idle key (idlekey.go; by key, or authority or host name
// of http or https) matches.
func (f *Frontier) KeyQueue(ctx context.Context, name string) (k KeyInfo, ram, disk []string, budget int64, ok bool, err error) {
	var prefix string
	err = f.do(ctx, func(s *scheduler) {
		v := s.states[name]
		if v == nil {
			want := strings.ToLower(name)
			for key, w := range s.states {
				if i := strings.Index(key, "://"); (i >= 0 && key[i+3:] == want) || w.host.name == want {
					v = w
					break
				}
			}
		}
		if v == nil {
			if ik, idle := s.idleKeyNamed(name); idle {
				k, ok = *ik, true
				if s.assign.kind == assignAuthority {
					prefix = ik.Key
				}
				s.robots.lookup(ik.Key) // back in RAM for Host, as for a visit state
			}
			return
		}
		k, ok, prefix = *s.keyInfo(v), true, v.prefix()
		ram, disk = s.sample(v)
	})
	if ok {
		budget = f.budgetUsed(prefix, ram, disk)
	}
	return k, ram, disk, budget, ok, err
}

// budgetUsed is the per-key budget used by the visit state whose URLs
// begin with prefix or, under a policy whose keys are not one authority
// (prefix ""), by the authority of its next URL (NextAuthority): the
// budget counts URLs per scheme+authority.
func (f *Frontier) budgetUsed(prefix string, ram, disk []string) int64 {
	if prefix == "" {
		prefix = NextAuthority(ram, disk)
	}
	if !strings.Contains(prefix, "://") {
		return 0
	}
	return f.counts.get([]byte(prefix))
}

// NextAuthority returns the scheme and authority of a key's next URL, the
// first of ram or else of disk (as KeyQueue samples them), or "" when it
// queues none: what its budget and robots.txt go by when the key is not
// one authority.
func NextAuthority(ram, disk []string) string {
	for _, l := range [][]string{ram, disk} {
		if len(l) > 0 {
			return string(schemeAuthorityOf([]byte(l[0])))
		}
	}
	return ""
}

// sample returns the first URLs of v's queue in RAM and on disk.
func (s *scheduler) sample(v *visitState) (ram, disk []string) {
	for _, r := range v.retries() {
		if len(ram) < sampleURLs {
			ram = append(ram, v.prefix()+r.rec[MetaLen:])
		}
	}
	v.queue.each(func(rec []byte) {
		if len(ram) < sampleURLs {
			ram = append(ram, v.prefix()+string(rec[MetaLen:]))
		}
	})
	if p, ok := s.f.cfg.Virtualizer.(VirtualPeeker); ok && v.onDisk > 0 {
		recs, _ := p.Peek(v.id)
		for _, rec := range recs[:min(len(recs), sampleURLs)] {
			disk = append(disk, v.prefix()+string(rec[MetaLen:]))
		}
	}
	return ram, disk
}

// RobotsRule says what the robots.txt the frontier holds for url's
// authority decides for it, with the deciding line when the rules can
// tell (known is false when no robots.txt is held now).
func (f *Frontier) RobotsRule(ctx context.Context, url string) (known, allowed bool, rule string, err error) {
	err = f.do(ctx, func(s *scheduler) {
		sa := string(schemeAuthorityOf([]byte(url)))
		rs := s.robots.lookup(sa)
		if rs == nil || rs.rules == nil {
			return
		}
		known = true
		pq := url[len(sa):]
		if m, ok := rs.rules.(interface{ Match(string) (bool, string) }); ok {
			allowed, rule = m.Match(pq)
		} else {
			allowed = rs.rules.Allowed(pq)
		}
	})
	return known, allowed, rule, err
}

// Drop empties the visit states match names (by key, host name or
// address) and marks them broken, so that nothing more of them is
// fetched; it returns the URLs dropped, counted (Blocked, BlockedQueued)
// and told to Dropped (DropBlocked) like those that reach the visit
// states later. Requests in flight end as they
// would.
func (f *Frontier) Drop(ctx context.Context, match func(key, host string, addr netip.Addr) bool) (int64, error) {
	var n int64
	err := f.do(ctx, func(s *scheduler) {
		for _, v := range s.states {
			var addr netip.Addr
			if v.host.resolved {
				addr = v.host.addr
			}
			if !v.broken() && match(v.key, v.host.name, addr) {
				d := s.empty(v, DropBlocked)
				s.countDrop(DropBlocked, d)
				n += d
			}
		}
	})
	return n, err
}

// Cache returns the frontier's URL cache (nil: none).
func (f *Frontier) Cache() URLCache { return f.cfg.Cache }

// SieveBuffered is the number of keys offered to the sieve that its last
// flush did not cover (some may be duplicates).
func (f *Frontier) SieveBuffered() int64 { return max(f.sieveIn.Load()-f.sieveFlushed.Load(), 0) }

// KeyStates counts the visit states waiting (for DNS or robots.txt) and
// broken (purged).
func (f *Frontier) KeyStates(ctx context.Context) (waiting, broken int, err error) {
	err = f.do(ctx, func(s *scheduler) {
		for _, v := range s.states {
			switch {
			case v.broken():
				broken++
			case v.waiting():
				waiting++
			}
		}
	})
	return waiting, broken, err
}
