package console

import (
	"time"

	"github.com/petrel-crawler/petrel/internal/revisit"
	"github.com/petrel-crawler/petrel/internal/stats"
)

// Status is GET /api/v1/status.
type Status struct {
	State    State            `json:"state"`
	Uptime   string           `json:"uptime"`
	UptimeS  float64          `json:"uptime_s"`
	Totals   Totals           `json:"totals"`
	Rates    Rates            `json:"rates"`
	Status   map[string]int64 `json:"status_classes"`
	Content  map[string]int64 `json:"content_types"`
	Frontier FrontierFigures  `json:"frontier"`
	Fetchers FetcherFigures   `json:"fetchers"`
	DNS      map[string]int64 `json:"dns"`
	Robots   map[string]int64 `json:"robots"`
	Dups     map[string]int64 `json:"duplicates"`
	Cuts     map[string]int64 `json:"cuts"`
	Errors   []ErrorLine      `json:"recent_errors"`
	Settings map[string]any   `json:"settings"`
	Cluster  []Member         `json:"cluster,omitempty"`
	Revisits *revisit.Figures `json:"revisits,omitempty"`
	History  []Sample         `json:"history,omitempty"`
	Counters stats.Snapshot   `json:"counters"`
}

// Totals are the crawl's cumulative figures.
type Totals struct {
	Pages       int64 `json:"pages"`
	Bytes       int64 `json:"bytes"`
	RobotsTxt   int64 `json:"robots_txt"`
	Stored      int64 `json:"stored"`
	WARCBytes   int64 `json:"warc_bytes"`
	Known       int64 `json:"urls_known"`
	Errors      int64 `json:"errors"`
	LinksFound  int64 `json:"links_found"`
	Checkpoints int64 `json:"checkpoints"`
}

// Rates are per second, over the last sample interval and since the start.
type Rates struct {
	PagesPerSec    float64 `json:"pages_per_s"`
	BytesPerSec    float64 `json:"bytes_per_s"`
	AvgPagesPerSec float64 `json:"avg_pages_per_s"`
}

// FrontierFigures are the frontier's gauges.
type FrontierFigures struct {
	SieveBuffered int64 `json:"sieve_buffered"` // offered to the sieve, not yet flushed
	Ready         int64 `json:"ready"`
	Queued        int64 `json:"queued"`
	QueuedBytes   int64 `json:"queued_bytes"`
	Virtualized   int64 `json:"virtualized"`
	VisitStates   int64 `json:"visit_states"`
	HostsActive   int64 `json:"hosts_active"`
	HostsWaiting  int64 `json:"hosts_waiting"`
	HostsBroken   int64 `json:"hosts_broken"`
	IPEntries     int64 `json:"ip_entries"`
	FrontSize     int64 `json:"front_size"`
	InFlight      int64 `json:"in_flight"`
}

// FetcherFigures say how much the fetchers waited for work.
type FetcherFigures struct {
	Waits     int64   `json:"waits"`
	WaitTotal string  `json:"wait_total"`
	WaitS     float64 `json:"wait_s"`
}

func (s *Server) status(history bool) Status {
	c := s.opts.Crawl
	snap := c.Counters()
	up := time.Since(s.started)
	st := Status{
		State:   c.State(),
		Uptime:  up.Round(time.Second).String(),
		UptimeS: up.Seconds(),
		Totals: Totals{
			Pages: snap["Fetched"], Bytes: snap["BytesReceived"], RobotsTxt: snap["RobotsFetched"],
			Stored: snap["Stored"], WARCBytes: snap["WARCBytes"], Known: snap["SieveNew"],
			Errors: snap.Errors(), LinksFound: snap["LinksFound"], Checkpoints: snap["Checkpoints"],
		},
		Status: pick(snap, map[string]string{"1xx": "Status1xx", "2xx": "Status2xx", "3xx": "Status3xx",
			"4xx": "Status4xx", "5xx": "Status5xx", "other": "StatusOther"}),
		Content: pick(snap, map[string]string{"text": "ContentText", "image": "ContentImage",
			"application": "ContentApp", "other": "ContentOther"}),
		Frontier: FrontierFigures{
			SieveBuffered: snap["SieveBuffered"],
			Ready:         snap["Ready"], Queued: snap["Queued"], QueuedBytes: snap["QueuedBytes"],
			Virtualized: snap["Virtualized"], VisitStates: snap["VisitStates"],
			HostsActive: snap["ActiveKeys"], HostsWaiting: snap["WaitingKeys"], HostsBroken: snap["BrokenKeys"],
			IPEntries: snap["IPEntries"], FrontSize: snap["RequiredFront"], InFlight: snap["InFlight"],
		},
		Fetchers: FetcherFigures{Waits: snap["FetcherWaits"],
			WaitTotal: time.Duration(snap["FetcherWaitNano"]).Round(time.Millisecond).String(),
			WaitS:     time.Duration(snap["FetcherWaitNano"]).Seconds()},
		DNS:    pick(snap, map[string]string{"failures": "DNSFailures", "address_refused": "AddressRefused"}),
		Robots: pick(snap, map[string]string{"fetched": "RobotsFetched", "denied": "RobotsDenied", "redirects": "RobotsRedirects"}),
		Dups: pick(snap, map[string]string{"payload": "Duplicates", "text": "TextDuplicates", "near": "NearDuplicates",
			"url_cache_hits": "CacheHits"}),
		Cuts:     cuts(snap),
		Errors:   s.opts.Tally.Errors(),
		Settings: c.Settings(),
		Cluster:  c.Members(),
		Counters: snap,
	}
	if rv, ok := c.Revisits(); ok {
		st.Revisits = &rv
	}
	if len(st.Errors) > 20 {
		st.Errors = st.Errors[:20]
	}
	if up > 0 {
		st.Rates.AvgPagesPerSec = float64(st.Totals.Pages) / up.Seconds()
	}
	samples := s.hist.Samples()
	if n := len(samples); n > 0 {
		st.Rates.PagesPerSec, st.Rates.BytesPerSec = samples[n-1].PagesPerSec, samples[n-1].BytesPerSec
	}
	if history {
		st.History = samples
	}
	return st
}

// cutCounters name the counters of URLs refused, by reason.
var cutCounters = map[string]string{
	"scope": "OutOfScope", "rule": "Filtered", "trap-length": "CutLength", "trap-redirects": "CutRedirects",
	"trap-depth": "CutDepth", "trap-segment": "CutRepeatedSegment", "over-budget": "OverBudget",
	"robots": "RobotsDenied", "nofollow-pages": "NoFollow", "address": "AddressRefused",
	"blocklist": "Blocked", "links-dropped": "LinksDropped", "broken-host": "PurgedURLs",
	"embed-hops": "CutEmbedHops", "requisites-dropped": "EmbedsDropped", "sitemap-nested": "CutSitemapNested",
}

func cuts(snap stats.Snapshot) map[string]int64 { return pick(snap, cutCounters) }

func pick(snap stats.Snapshot, names map[string]string) map[string]int64 {
	out := make(map[string]int64, len(names))
	for k, v := range names {
		out[k] = snap[v]
	}
	return out
}
