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
	if via != "" {
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
	if len(kept) > 0 {
		a.vias.add(m.Via, via)
	}
	if err := a.frontier.EnqueueAll(kept, m); err != nil {
		a.log.Error("enqueue", "links", len(kept), "err", err)
	}
}

// admit applies the scope and the trap rules to u, found on the page via,
// counting and logging each refusal by reason. A requisite (m.Embeds > 0)
// passes the scope when --embeds-off-scope is set: a page's style sheets,
// scripts and images are often on another host (a CDN), and the archive
// needs them.
func (a *Agent) admit(u urlx.URL, via string, m frontier.Meta) bool {
	l := a.live.Load()
	if !(m.Embeds > 0 && a.cfg.EmbedsOffScope) && !l.scope.Allows(u) {
		a.stats.OutOfScope.Add(1)
		a.refuse(u.String(), via, m, crawllog.ReasonScope, "--scope "+string(l.scope.Kind()))
		return false
	}
	var reason crawllog.Reason
	switch cut := l.traps.Check(u, int(m.Depth), int(m.Redirects)); cut {
	case filter.Keep:
		return true
	case filter.CutLength:
		a.stats.CutLength.Add(1)
		reason = crawllog.ReasonLength
	case filter.CutRedirects:
		a.stats.CutRedirects.Add(1)
		reason = crawllog.ReasonRedirects
	case filter.CutDepth:
		a.stats.CutDepth.Add(1)
		reason = crawllog.ReasonDepth
	case filter.CutRepeatedSegment:
		a.stats.CutRepeatedSegment.Add(1)
		reason = crawllog.ReasonRepeatedSegment
	default:
		a.stats.Filtered.Add(1)
		reason = crawllog.ReasonRule
	}
	a.refuse(u.String(), via, m, reason, "")
	return false
}
