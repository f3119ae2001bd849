package agent

import (
	"github.com/petrel-crawler/petrel/internal/filter"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// traps returns the trap limits of the configuration.
func (a *Agent) traps() filter.Traps {
	return filter.Traps{
		MaxLength:         a.cfg.MaxURLLength,
		MaxRedirects:      a.cfg.MaxRedirects,
		MaxDepth:          a.cfg.MaxDepth,
		MaxSegmentRepeats: a.cfg.MaxSegRepeats,
	}
}

// offer applies the scope and the trap rules, counting each refusal by
// reason, then enqueues u with its meta.
func (a *Agent) offer(u urlx.URL, m frontier.Meta) {
	if !a.scope.Allows(u) {
		a.stats.OutOfScope.Add(1)
		return
	}
	switch cut := a.traps().Check(u, int(m.Depth), int(m.Redirects)); cut {
	case filter.Keep:
	case filter.CutLength:
		a.stats.CutLength.Add(1)
		return
	case filter.CutRedirects:
		a.stats.CutRedirects.Add(1)
		a.log.Info("redirect chain cut", "url", u.String(), "redirects", m.Redirects)
		return
	case filter.CutDepth:
		a.stats.CutDepth.Add(1)
		return
	case filter.CutRepeatedSegment:
		a.stats.CutRepeatedSegment.Add(1)
		return
	default:
		a.stats.Filtered.Add(1)
		return
	}
	if err := a.frontier.Enqueue(u, m); err != nil {
		a.log.Error("enqueue", "url", u.String(), "err", err)
	}
}
