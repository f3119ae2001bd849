package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// blocklistFile holds, in state/, the blocklist's entries, so that a stop
// and resume keeps them: {"entries": [...]}, in the order added.
const blocklistFile = "blocklist.json"

// blocklist is the set of hosts, addresses and CIDR ranges the crawl no
// longer fetches from (POST /api/v1/blocklist). It only grows. Readers take
// the current set without a lock; an empty blocklist costs one atomic load.
// A new set is saved (path) before it is published: a blocklist in force
// is one a restart keeps.
type blocklist struct {
	mu   sync.Mutex // serialises writers
	cur  atomic.Pointer[blockSet]
	path string // state/blocklist.json ("": not saved)
}

type blockSet struct {
	hosts   map[string]bool       // lower-case names; a name also blocks its subdomains
	addrs   map[netip.Addr]bool   // single addresses
	ranges  map[netip.Prefix]bool // CIDR ranges, masked
	bits    []int                 // the distinct lengths of ranges: a lookup costs one probe each
	entries []string              // as added, normalised: what is saved
}

// maxBlockEntries bounds the blocklist.
const maxBlockEntries = 100_000

// add parses and adds entries: a host name, an IP address or a CIDR
// range each; the new set is saved, then in force. Nothing is added when
// one is malformed or the set cannot be saved.
func (b *blocklist) add(entries []string) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	next, added, err := b.cur.Load().with(entries)
	if err != nil {
		return nil, err
	}
	if b.path != "" {
		data, err := json.Marshal(map[string][]string{"entries": next.entries})
		if err == nil {
			err = atomicfile.WriteBytes(b.path, append(data, '\n'), atomicfile.Options{Sync: true})
		}
		if err != nil {
			return nil, fmt.Errorf("blocklist: save: %w", err)
		}
	}
	b.cur.Store(next)
	return added, nil
}

// load reads the entries saved at path (none when the file is missing)
// and saves further changes there.
func (b *blocklist) load(path string) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.path = path
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var saved struct{ Entries []string }
	if err := json.Unmarshal(data, &saved); err != nil {
		return 0, fmt.Errorf("%s: %v", path, err)
	}
	next, _, err := b.cur.Load().with(saved.Entries)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", path, err)
	}
	b.cur.Store(next)
	return len(next.entries), nil
}

// entries returns the entries in force, as added.
func (b *blocklist) entries() []string {
	if s := b.cur.Load(); s != nil {
		return slices.Clone(s.entries)
	}
	return nil
}

// with returns s (nil: empty) with entries added, and the entries added,
// normalised (those already in s are not added again).
func (s *blockSet) with(entries []string) (*blockSet, []string, error) {
	next := &blockSet{hosts: map[string]bool{}, addrs: map[netip.Addr]bool{}, ranges: map[netip.Prefix]bool{}}
	if s != nil {
		maps.Copy(next.hosts, s.hosts)
		maps.Copy(next.addrs, s.addrs)
		maps.Copy(next.ranges, s.ranges)
		next.bits = slices.Clone(s.bits)
		next.entries = append(next.entries, s.entries...)
	}
	have := make(map[string]bool, len(next.entries)+len(entries))
	for _, e := range next.entries {
		have[e] = true
	}
	keep := func(e string) bool {
		if have[e] {
			return false
		}
		have[e] = true
		next.entries = append(next.entries, e)
		return true
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
				return nil, nil, fmt.Errorf("blocklist entry %q: not a CIDR range", e)
			}
			if p = p.Masked(); keep(p.String()) {
				next.ranges[p] = true
				if !slices.Contains(next.bits, p.Bits()) {
					next.bits = append(next.bits, p.Bits())
				}
			}
			added = append(added, p.Masked().String())
		default:
			if a, err := netip.ParseAddr(strings.Trim(e, "[]")); err == nil {
				if keep(a.String()) {
					next.addrs[a.Unmap()] = true
				}
				added = append(added, a.String())
				continue
			}
			if strings.ContainsAny(e, ":/?#@ ") || strings.Trim(e, ".") == "" {
				return nil, nil, fmt.Errorf("blocklist entry %q: want a host name, an IP address or a CIDR range", e)
			}
			h := strings.Trim(e, ".")
			if keep(h) {
				next.hosts[h] = true
			}
			added = append(added, h)
		}
	}
	if len(next.entries) > maxBlockEntries {
		return nil, nil, fmt.Errorf("blocklist: more than %d entries", maxBlockEntries)
	}
	return next, added, nil
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
	if s.addrs[a] {
		return true
	}
	for _, b := range s.bits {
		if p, err := a.Prefix(b); err == nil && s.ranges[p] {
			return true
		}
	}
	return false
}

// blocked reports whether u must not be fetched because of the blocklist.
func (a *Agent) blocked(u urlx.URL) bool { return a.block.host(u.Hostname()) }
