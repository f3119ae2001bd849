package agent

import (
	"github.com/petrel-crawler/petrel/internal/crawllog"
	"github.com/petrel-crawler/petrel/internal/filter"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// offer enqueues u, found on the page via ("" for a seed), with its meta
// if admit lets it through.
func (a *Agent) offer(u urlx.URL, via string, m frontier.Meta) {
	if !a.admit(u, via, m) {
		return
	}
	if via != "" && !a.crawlLog.Off() {
		a.vias.add(m.Via, via)
	}
	if err := a.frontier.Enqueue(u, m); err != nil {
		a.log.Error("enqueue", "url", u.String(), "err", err)
	}
}

// offerLinks enqueues the links of the page via that admit lets through,
// together (frontier.EnqueueAll). It filters links in place: their slice
// holds other URLs afterwards.
func (a *Agent) offerLinks(links []urlx.URL, via string, m frontier.Meta) {
	kept := links[:0]
	for _, u := range links {
		if a.admit(u, via, m) {
			kept = append(kept, u)
		}
	}
	if len(kept) > 0 && !a.crawlLog.Off() {
		a.vias.add(m.Via, via)
	}
	if err := a.frontier.EnqueueAll(kept, m); err != nil {
		a.log.Error("enqueue", "links", len(kept), "err", err)
	}
}

// admit applies the blocklist, the scope, the trap rules and the schedule
// filter to u, found on the page via, counting and logging each refusal by
// reason.
func (a *Agent) admit(u urlx.URL, via string, m frontier.Meta) bool {
	reason := a.rule(u, m)
	if reason == "" {
		return true
	}
	a.countRefusal(reason)
	var rule string
	switch reason {
	case crawllog.ReasonScope:
		rule = "--scope " + string(a.live.Load().scope.Kind())
	case crawllog.ReasonFilterSchedule:
		rule = a.live.Load().filters.Rule(filter.StageSchedule)
	}
	a.refuse(u.String(), via, m, reason, rule)
	return false
}

// countRefusal counts one URL refused for reason, by its counter.
func (a *Agent) countRefusal(reason crawllog.Reason) {
	s := a.stats
	switch reason {
	case crawllog.ReasonBlocklist:
		s.Blocked.Add(1)
	case crawllog.ReasonScope:
		s.OutOfScope.Add(1)
	case crawllog.ReasonFilterSchedule:
		s.FilteredSchedule.Add(1)
	case crawllog.ReasonFilterFetch:
		s.FilteredFetch.Add(1)
	case crawllog.ReasonFilterParse:
		s.FilteredParse.Add(1)
	case crawllog.ReasonFilterFollow:
		s.FilteredFollow.Add(1)
	case crawllog.ReasonFilterStore:
		s.FilteredStore.Add(1)
	case crawllog.ReasonLength:
		s.CutLength.Add(1)
	case crawllog.ReasonRedirects:
		s.CutRedirects.Add(1)
	case crawllog.ReasonDepth:
		s.CutDepth.Add(1)
	case crawllog.ReasonEmbedHops:
		s.CutEmbedHops.Add(1)
	case crawllog.ReasonSitemapNested:
		s.CutSitemapNested.Add(1)
	case crawllog.ReasonRepeatedSegment:
		s.CutRepeatedSegment.Add(1)
	default:
		s.Filtered.Add(1)
	}
}

// rule returns the rule that refuses u found with m ("" when none does),
// counting nothing: the blocklist, the scope, the trap rules, the schedule
// filter, in that order. A requisite (m.Embeds > 0) passes the scope when
// --embeds-off-scope is set: a page's style sheets, scripts and images are
// often on another host (a CDN), and the archive needs them.
func (a *Agent) rule(u urlx.URL, m frontier.Meta) crawllog.Reason {
	if a.blocked(u) {
		return crawllog.ReasonBlocklist
	}
	l := a.live.Load()
	if !(m.Embeds > 0 && a.cfg.EmbedsOffScope) && !l.scope.Allows(u) {
		return crawllog.ReasonScope
	}
	switch l.traps.Check(u, int(m.Depth), int(m.Redirects)) {
	case filter.Keep:
		if l.filters.Active(filter.StageSchedule) &&
			!l.filters.Accept(filter.StageSchedule, filter.NewSubject(u, int(m.Depth), m.Path.String())) {
			return crawllog.ReasonFilterSchedule
		}
		return ""
	case filter.CutLength:
		return crawllog.ReasonLength
	case filter.CutRedirects:
		return crawllog.ReasonRedirects
	case filter.CutDepth:
		return crawllog.ReasonDepth
	case filter.CutRepeatedSegment:
		return crawllog.ReasonRepeatedSegment
	}
	return crawllog.ReasonRule
}
