package agent

import (
	"github.com/petrel-crawler/petrel/internal/crawllog"
	"github.com/petrel-crawler/petrel/internal/fetch"
	"github.com/petrel-crawler/petrel/internal/filter"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// The filters of BUbiNG's five stages are applied where the URL meets
// them: schedule in admit (after --scope and the trap rules), fetch by the
// frontier as the URL comes up for dispatch (Cuts.Keep, so that a refused
// URL costs its host no delay), store before the WARC records are written,
// parse before the parser reads the body, follow before the page's links
// and requisites (and a redirect's target) are offered. Each refusal is
// counted by stage and logged with the filter's text (skipped.jsonl, and
// crawl.log for a URL refused before its request). The filters in force
// are part of the published live settings: a change applies to every URL
// met from then on.

// stageReasons are the skip reasons of the stages.
var stageReasons = [filter.NumStages]crawllog.Reason{
	crawllog.ReasonFilterSchedule, crawllog.ReasonFilterFetch, crawllog.ReasonFilterParse,
	crawllog.ReasonFilterFollow, crawllog.ReasonFilterStore,
}

// countFiltered counts one refusal of a stage.
func (a *Agent) countFiltered(stage filter.Stage) { a.countRefusal(stageReasons[stage]) }

// passURLWith applies a URL stage's filter (schedule or fetch) of fs to u
// found on via with Meta m; a refusal is counted and logged to both logs.
func (a *Agent) passURLWith(fs *filter.Stages, stage filter.Stage, u urlx.URL, via string, m frontier.Meta) bool {
	if !fs.Active(stage) {
		return true
	}
	if fs.Accept(stage, filter.NewSubject(u, int(m.Depth), m.Path.String())) {
		return true
	}
	a.countFiltered(stage)
	a.refuse(u.String(), via, m, stageReasons[stage], fs.Rule(stage))
	return false
}

// passResponse applies a response stage's filter (parse, follow, store) to
// resp, the response of a URL with Meta m; a refusal is counted and logged
// to skipped.jsonl (the fetch has its crawl.log line). langs are the
// page's languages ("" when none were identified or detected).
func (a *Agent) passResponse(stage filter.Stage, m frontier.Meta, resp *fetch.Response, duplicate bool, langs string) bool {
	fs := a.live.Load().filters
	if !fs.Active(stage) {
		return true
	}
	u, err := urlx.Parse(resp.URL)
	if err != nil {
		return true
	}
	s := filter.NewSubject(u, int(m.Depth), m.Path.String())
	s.Status, s.ContentType, s.Duplicate = resp.Status, resp.Header.Get("Content-Type"), duplicate
	s.Languages = langs
	if fs.Accept(stage, s) {
		return true
	}
	a.countFiltered(stage)
	a.crawlLog.Skip(&crawllog.Skip{URL: resp.URL, Via: a.vias.name(m.Via), Reason: stageReasons[stage], Rule: fs.Rule(stage)})
	return false
}
