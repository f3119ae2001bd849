package filter

import (
	"strings"

	"github.com/petrel-crawler/petrel/internal/settings"
)

// Settings are the filters' settings of a crawl, declared in Table.
type Settings struct {
	Scope ScopeKind
	Traps Traps
	// The filters of BUbiNG's five stages, in the filter language ("":
	// accept everything).
	ScheduleFilter, FetchFilter, ParseFilter, FollowFilter, StoreFilter string
}

// filterTexts returns the stages' filter settings, in Stage order.
func (s *Settings) filterTexts() [NumStages]*string {
	return [NumStages]*string{&s.ScheduleFilter, &s.FetchFilter, &s.ParseFilter, &s.FollowFilter, &s.StoreFilter}
}

// Table declares the filters' settings, bound to s.
func (s *Settings) Table() settings.Table {
	t := settings.Table{
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
	help := [NumStages]string{
		"filter a URL must pass to enter the frontier (with --scope and the trap rules), e.g. 'not PathEndsWithOneOf(.jpg,.png)'",
		"filter a queued URL must pass when it comes up for its request, e.g. 'not HostEndsWith(.example.org)'",
		"filter a response must pass to be parsed for links, e.g. 'ContentTypeStartsWith(text/html)'",
		"filter a parsed page must pass for its links and requisites to be followed, e.g. 'StatusCategory(2) and not IsDuplicate'",
		"filter a response must pass to be written to the WARC files, e.g. 'not StatusCategory(5)', or 'LanguageIsOneOf(eng,und)' (English pages and what is not a page; docs/datasets.md)",
	}
	for i, p := range s.filterTexts() {
		stage := Stage(i)
		t = append(t, settings.String(p, stage.Setting(), "", help[i]).
			WithUnit("FILTER").In(settings.Seeds).SetLive().ClusterWide().
			Check(func() error {
				if strings.TrimSpace(*p) == "" {
					return nil
				}
				e, err := Parse(*p)
				if err == nil {
					err = stage.Check(e)
				}
				return err
			}))
	}
	return t
}
