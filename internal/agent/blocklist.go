package agent

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

// blocklist is the set of hosts, addresses and CIDR ranges the crawl no
// longer fetches from (POST /api/v1/blocklist). It only grows. Readers take
// the current set without a lock; an empty blocklist costs one atomic load.
type blocklist struct {
	mu  sync.Mutex // serialises writers
	cur atomic.Pointer[blockSet]
}

type blockSet struct {
	hosts    map[string]bool // lower-case names; a name also blocks its subdomains
	prefixes []netip.Prefix
}

// maxBlockEntries bounds the blocklist.
const maxBlockEntries = 100_000

// add parses and adds entries: a host name, an IP address or a CIDR
// range each. Nothing is added when one is malformed.
func (b *blocklist) add(entries []string) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.cur.Load()
	next := &blockSet{hosts: map[string]bool{}}
	if old != nil {
		for h := range old.hosts {
			next.hosts[h] = true
		}
		next.prefixes = append(next.prefixes, old.prefixes...)
	}
	var added []string
	for _, e := range entries {
		e = strings.ToLower(strings.TrimSpace(e))
		switch {
		case e == "":
			continue
		case strings.Contains(e, "/"):
			p, err := netip.ParsePrefix(e)
			if err != nil {
				return nil, fmt.Errorf("blocklist entry %q: not a CIDR range", e)
			}
			next.prefixes = append(next.prefixes, p.Masked())
			added = append(added, p.Masked().String())
		default:
			if a, err := netip.ParseAddr(strings.Trim(e, "[]")); err == nil {
				next.prefixes = append(next.prefixes, netip.PrefixFrom(a, a.BitLen()))
				added = append(added, a.String())
				continue
			}
			if strings.ContainsAny(e, ":/?#@ ") || strings.Trim(e, ".") == "" {
				return nil, fmt.Errorf("blocklist entry %q: want a host name, an IP address or a CIDR range", e)
			}
			h := strings.Trim(e, ".")
			next.hosts[h] = true
			added = append(added, h)
		}
	}
	if len(next.hosts)+len(next.prefixes) > maxBlockEntries {
		return nil, fmt.Errorf("blocklist: more than %d entries", maxBlockEntries)
	}
	b.cur.Store(next)
	return added, nil
}

// host reports whether the host name (or one of its parent domains) is
// blocked, or it is an address literal inside a blocked range.
func (b *blocklist) host(name string) bool {
	s := b.cur.Load()
	if s == nil {
		return false
	}
	name = strings.ToLower(strings.Trim(name, "[]"))
	if a, err := netip.ParseAddr(name); err == nil {
		return s.addrIn(a)
	}
	for {
		if s.hosts[name] {
			return true
		}
		i := strings.IndexByte(name, '.')
		if i < 0 {
			return false
		}
		name = name[i+1:]
	}
}

// addr reports whether an address is blocked.
func (b *blocklist) addr(a netip.Addr) bool {
	s := b.cur.Load()
	return s != nil && s.addrIn(a)
}

func (s *blockSet) addrIn(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range s.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// blocked reports whether u must not be fetched because of the blocklist.
func (a *Agent) blocked(u urlx.URL) bool { return a.block.host(u.Hostname()) }
