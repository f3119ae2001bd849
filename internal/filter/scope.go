package filter

import (
	"fmt"
	"sort"
	"strings"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

// ScopeKind names a scope rule.
type ScopeKind string

// The scope rules of --scope.
const (
	ScopeAll    ScopeKind = "all"    // every http(s) URL
	ScopeHost   ScopeKind = "host"   // only the seeds' hosts
	ScopeDomain ScopeKind = "domain" // only the seeds' registered domains
	ScopePrefix ScopeKind = "prefix" // only URLs under a seed URL (SURT prefix)
)

// ParseScopeKind checks a --scope value.
func ParseScopeKind(s string) (ScopeKind, error) {
	switch k := ScopeKind(s); k {
	case ScopeAll, ScopeHost, ScopeDomain, ScopePrefix:
		return k, nil
	}
	return "", fmt.Errorf("filter: unknown scope %q (want all, host, domain or prefix)", s)
}

// Scope is a scope rule instantiated with the seeds. Its methods are safe
// for concurrent use; it is not modified after the seeds are added.
type Scope struct {
	kind     ScopeKind
	hosts    map[string]bool
	domains  map[string]bool
	prefixes []string // SURT prefixes
}

// NewScope creates an empty scope of the given kind; add the seeds with
// AddSeed before use.
func NewScope(kind ScopeKind) *Scope {
	return &Scope{kind: kind, hosts: map[string]bool{}, domains: map[string]bool{}}
}

// AddSeed widens the scope with a seed.
func (s *Scope) AddSeed(u urlx.URL) {
	h := u.Hostname()
	s.hosts[h] = true
	s.domains[urlx.RegisteredDomain(h)] = true
	p := urlx.SURT(u)
	// The prefix of a seed is its directory: http://(test,a,)/docs/x.html → .../docs/
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		if q := strings.IndexByte(p, '?'); q < 0 || q > i {
			p = p[:i+1]
		}
	}
	// Both schemes: https://(...)/ and http://(...)/ are the same site.
	p = strings.TrimPrefix(strings.TrimPrefix(p, "http://"), "https://")
	s.prefixes = append(s.prefixes, p)
}

// Allows reports whether u is in scope.
func (s *Scope) Allows(u urlx.URL) bool {
	switch s.kind {
	case ScopeHost:
		return s.hosts[u.Hostname()]
	case ScopeDomain:
		return s.domains[urlx.RegisteredDomain(u.Hostname())]
	case ScopePrefix:
		p := urlx.SURT(u)
		p = strings.TrimPrefix(strings.TrimPrefix(p, "http://"), "https://")
		for _, pre := range s.prefixes {
			if strings.HasPrefix(p, pre) {
				return true
			}
		}
		return false
	}
	return true
}

// Kind returns the scope's rule.
func (s *Scope) Kind() ScopeKind { return s.kind }

// Filter returns the schedule filter that --scope is shorthand for, in the
// filter language: the predicates that accept what Allows accepts.
func (s *Scope) Filter() string {
	var terms []string
	switch s.kind {
	case ScopeHost:
		for _, h := range sortedKeys(s.hosts) {
			terms = append(terms, "HostEquals("+h+")")
		}
	case ScopeDomain:
		for _, d := range sortedKeys(s.domains) {
			terms = append(terms, "HostEquals("+d+") or HostEndsWith(."+d+")")
		}
	case ScopePrefix:
		for _, p := range s.prefixes {
			terms = append(terms, "SURTPrefix("+p+")")
		}
	default:
		return "true"
	}
	if len(terms) == 0 {
		return "false"
	}
	return strings.Join(terms, " or ")
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
