package filter

import "github.com/petrel-crawler/petrel/internal/settings"

// Settings are the filters' settings of a crawl, declared in Table.
type Settings struct {
	Scope ScopeKind
	Traps Traps
}

// Table declares the filters' settings, bound to s.
func (s *Settings) Table() settings.Table {
	return settings.Table{
		settings.Enum(&s.Scope, "scope", ScopeAll, []string{string(ScopeAll), string(ScopeHost), string(ScopeDomain), string(ScopePrefix)},
			"which URLs are followed: all, host, domain or prefix (of the seeds)").
			WithUnit("S").In(settings.Seeds).SetLive().ClusterWide(),
		settings.Count(&s.Traps.MaxLength, "max-url-length", DefaultMaxLength, "longer URLs are not followed").
			In(settings.Limits).AtLeast(16).SetFixed("URLs already queued were admitted with it").ClusterWide(),
		settings.Count(&s.Traps.MaxDepth, "max-depth", 0, "links followed from a seed (hop limit; 0 = no limit)").
			In(settings.Limits).Range(0, 0xfffe).SetLive().ClusterWide(),
		settings.Count(&s.Traps.MaxRedirects, "max-redirects", DefaultMaxRedirects,
			"URLs fetched per redirect chain (robots.txt: hops followed)").
			In(settings.Limits).Range(1, 254).SetFixed("redirect chains in progress were counted with it").ClusterWide(),
		settings.Count(&s.Traps.MaxSegmentRepeats, "max-segment-repeats", DefaultMaxSegmentRepeats,
			"URLs whose path repeats a segment more often are not followed (0 = no rule)").
			In(settings.Limits).AtLeast(0).SetFixed("URLs already queued were admitted with it").ClusterWide(),
	}
}
