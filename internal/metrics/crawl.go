package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/petrel-crawler/petrel/internal/stats"
)

// point is one sample of a family: its value and its label values (in the
// order of the family's label names).
type point struct {
	v  float64
	lv []string
}

// family is one metric read from the crawl's counters at scrape time.
type family struct {
	name, help string
	kind       prometheus.ValueType
	labels     []string
	points     func(src *Sources) []point
}

// one is a family without labels reading one counter.
func one(name, help string, kind prometheus.ValueType, c func(s *stats.Crawl) *atomic.Int64) family {
	return family{name: name, help: help, kind: kind, points: func(src *Sources) []point {
		return []point{{v: float64(c(src.Stats).Load())}}
	}}
}

// by is a family with one label, one counter per label value.
func by(name, help string, kind prometheus.ValueType, label string, cs map[string]func(s *stats.Crawl) *atomic.Int64) family {
	return family{name: name, help: help, kind: kind, labels: []string{label}, points: func(src *Sources) []point {
		ps := make([]point, 0, len(cs))
		for lv, c := range cs {
			ps = append(ps, point{v: float64(c(src.Stats).Load()), lv: []string{lv}})
		}
		return ps
	}}
}

const (
	counter = prometheus.CounterValue
	gauge   = prometheus.GaugeValue
)

type cf = func(s *stats.Crawl) *atomic.Int64

// families is every metric read from the counters of internal/stats.
var families = []family{
	by("petrel_pages_fetched_total", "Responses received for pages (robots.txt excluded), by status class.", counter, "class", map[string]cf{
		"1xx":   func(s *stats.Crawl) *atomic.Int64 { return &s.Status1xx },
		"2xx":   func(s *stats.Crawl) *atomic.Int64 { return &s.Status2xx },
		"3xx":   func(s *stats.Crawl) *atomic.Int64 { return &s.Status3xx },
		"4xx":   func(s *stats.Crawl) *atomic.Int64 { return &s.Status4xx },
		"5xx":   func(s *stats.Crawl) *atomic.Int64 { return &s.Status5xx },
		"other": func(s *stats.Crawl) *atomic.Int64 { return &s.StatusOther },
	}),
	by("petrel_pages_by_content_type_total", "Responses received for pages, by the family of their indicated content type.", counter, "family", map[string]cf{
		"text":        func(s *stats.Crawl) *atomic.Int64 { return &s.ContentText },
		"image":       func(s *stats.Crawl) *atomic.Int64 { return &s.ContentImage },
		"application": func(s *stats.Crawl) *atomic.Int64 { return &s.ContentApp },
		"other":       func(s *stats.Crawl) *atomic.Int64 { return &s.ContentOther },
	}),
	one("petrel_robots_fetched_total", "robots.txt responses received.", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.RobotsFetched }),
	one("petrel_received_bytes_total", "Bytes of responses as transferred (headers included).", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.BytesReceived }),
	one("petrel_fetch_errors_total", "Fetches that failed at the network level (no response).", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.FetchErrors }),
	one("petrel_fetch_timeouts_total", "Fetches that failed because a timeout expired.", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.Timeouts }),
	by("petrel_connections_total", "Requests by the connection they went on: opened (dialled for it) or reused (kept alive).", counter, "connection", map[string]cf{
		"opened": func(s *stats.Crawl) *atomic.Int64 { return &s.ConnsOpened },
		"reused": func(s *stats.Crawl) *atomic.Int64 { return &s.ConnsReused },
	}),
	by("petrel_tls_handshakes_total", "TLS handshakes of the connections opened: full, or resumed from a session of the host.", counter, "handshake", map[string]cf{
		"full":    func(s *stats.Crawl) *atomic.Int64 { return &s.TLSFull },
		"resumed": func(s *stats.Crawl) *atomic.Int64 { return &s.TLSResumed },
	}),
	one("petrel_http2_connections_total", "HTTP/2 connections opened (the server chose h2 by ALPN), of the connections opened.", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.H2Conns }),
	one("petrel_http2_streams_total", "Requests that went over HTTP/2, one stream each.", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.H2Streams }),
	one("petrel_truncated_responses_total", "Responses whose body was cut (by --max-body, a timeout or the peer).", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.Truncated }),
	one("petrel_retries_total", "Fetch attempts repeated after a failure, a 5xx or a 429.", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.Retries }),
	one("petrel_urls_offered_total", "URLs offered to the frontier (seeds, links, redirects), before any rule.", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.Enqueued }),
	one("petrel_urls_discovered_total", "URLs the sieve found new: the URLs known to the crawl.", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.SieveNew }),
	one("petrel_url_cache_hits_total", "URLs recognised as already seen by the URL cache, before the sieve.", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.CacheHits }),
	by("petrel_urls_cut_total", "URLs refused before entering the frontier or before their fetch, by reason.", counter, "reason", map[string]cf{
		"scope":            func(s *stats.Crawl) *atomic.Int64 { return &s.OutOfScope },
		"rule":             func(s *stats.Crawl) *atomic.Int64 { return &s.Filtered },
		"length":           func(s *stats.Crawl) *atomic.Int64 { return &s.CutLength },
		"redirects":        func(s *stats.Crawl) *atomic.Int64 { return &s.CutRedirects },
		"depth":            func(s *stats.Crawl) *atomic.Int64 { return &s.CutDepth },
		"embed_hops":       func(s *stats.Crawl) *atomic.Int64 { return &s.CutEmbedHops },
		"sitemap_nested":   func(s *stats.Crawl) *atomic.Int64 { return &s.CutSitemapNested },
		"repeated_segment": func(s *stats.Crawl) *atomic.Int64 { return &s.CutRepeatedSegment },
		"over_budget":      func(s *stats.Crawl) *atomic.Int64 { return &s.OverBudget },
		"address_refused":  func(s *stats.Crawl) *atomic.Int64 { return &s.AddressRefused },
		"broken_host":      func(s *stats.Crawl) *atomic.Int64 { return &s.PurgedURLs },
		"blocklist":        func(s *stats.Crawl) *atomic.Int64 { return &s.Blocked },
	}),
	by("petrel_urls_filtered_total", "URLs and responses refused by the filter of each of BUbiNG's five stages.", counter, "stage", map[string]cf{
		"schedule": func(s *stats.Crawl) *atomic.Int64 { return &s.FilteredSchedule },
		"fetch":    func(s *stats.Crawl) *atomic.Int64 { return &s.FilteredFetch },
		"parse":    func(s *stats.Crawl) *atomic.Int64 { return &s.FilteredParse },
		"follow":   func(s *stats.Crawl) *atomic.Int64 { return &s.FilteredFollow },
		"store":    func(s *stats.Crawl) *atomic.Int64 { return &s.FilteredStore },
	}),
	one("petrel_robots_denied_total", "URLs not fetched because robots.txt disallows them.", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.RobotsDenied }),
	one("petrel_robots_held", "robots.txt states held in RAM (the others in the robots store).", gauge, func(s *stats.Crawl) *atomic.Int64 { return &s.RobotsHeld }),
	one("petrel_robots_loaded_total", "robots.txt states read back from the robots store.", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.RobotsLoaded }),
	one("petrel_robots_store_errors_total", "Robots store reads and writes that failed (the robots.txt is fetched again).", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.RobotsStoreErrors }),
	one("petrel_dns_lookups_total", "Host names sent to the DNS stage's resolvers.", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.DNSLookups }),
	one("petrel_dns_hosts_held", "Host names the DNS stage holds.", gauge, func(s *stats.Crawl) *atomic.Int64 { return &s.HostsHeld }),
	one("petrel_dns_hosts_forgotten_total", "Host names the DNS stage forgot (no visit state of theirs, nothing waiting).", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.HostsForgotten }),
	by("petrel_duplicates_total", "Pages found to duplicate others, by kind: payload (stored as revisit records), text (same normalised text on the host), near (SimHash).", counter, "kind", map[string]cf{
		"payload": func(s *stats.Crawl) *atomic.Int64 { return &s.Duplicates },
		"text":    func(s *stats.Crawl) *atomic.Int64 { return &s.TextDuplicates },
		"near":    func(s *stats.Crawl) *atomic.Int64 { return &s.NearDuplicates },
	}),
	one("petrel_pages_parsed_total", "HTML pages parsed for links.", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.Parsed }),
	one("petrel_links_found_total", "Links extracted from pages.", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.LinksFound }),
	one("petrel_links_dropped_total", "Links beyond --max-links on a page.", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.LinksDropped }),
	one("petrel_nofollow_pages_total", "Pages whose links were not followed (meta robots or X-Robots-Tag nofollow).", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.NoFollow }),
	one("petrel_redirects_total", "Redirects followed.", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.Redirects }),
	one("petrel_warc_response_records_total", "Response and revisit records written.", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.Stored }),
	one("petrel_warc_store_errors_total", "Responses that could not be written to the WARC files.", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.StoreErrors }),
	one("petrel_dns_failures_total", "Host names that did not resolve (after their retries).", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.DNSFailures }),
	one("petrel_hosts_broken_total", "Visit states purged as broken after repeated failures.", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.BrokenKeys }),
	one("petrel_checkpoints_total", "Checkpoints taken.", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.Checkpoints }),
	one("petrel_checkpoint_errors_total", "Checkpoints that failed.", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.CheckpointErrors }),
	one("petrel_virtualized_urls_total", "URLs ever moved to disk by the virtualizer.", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.VirtualizedTotal }),
	one("petrel_fetcher_waits_total", "Times a fetcher waited for a task.", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.FetcherWaits }),
	{name: "petrel_fetcher_wait_seconds_total", help: "Time fetchers spent waiting for a task, summed over fetchers.", kind: counter,
		points: func(src *Sources) []point { return []point{{v: float64(src.Stats.FetcherWaitNano.Load()) / 1e9}} }},
	{name: "petrel_checkpoint_pause_seconds", help: "How long the last checkpoint stopped the scheduler.", kind: gauge,
		points: func(src *Sources) []point { return []point{{v: float64(src.Stats.CheckpointPauseNano.Load()) / 1e9}} }},
	{name: "petrel_frontier_urls", help: "URLs waiting in the frontier, by where they are: ready (the ready queue, not yet in a visit state), queued_memory and queued_disk (in visit states), in_flight (being fetched).", kind: gauge,
		labels: []string{"state"}, points: func(src *Sources) []point {
			s := src.Stats
			virt := s.Virtualized.Load()
			return []point{
				{v: float64(s.Ready.Load()), lv: []string{"ready"}},
				{v: float64(s.Queued.Load() - virt), lv: []string{"queued_memory"}},
				{v: float64(virt), lv: []string{"queued_disk"}},
				{v: float64(s.InFlight.Load()), lv: []string{"in_flight"}},
			}
		}},
	one("petrel_frontier_queued_memory_bytes", "RAM bytes held by the queues of visit states.", gauge, func(s *stats.Crawl) *atomic.Int64 { return &s.QueuedBytes }),
	one("petrel_sieve_urls_total", "URLs handed to the sieve (after the URL cache and the per-host budget).", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.SieveEnqueued }),
	one("petrel_robots_redirects_total", "robots.txt redirect hops followed (same scheme and authority).", counter, func(s *stats.Crawl) *atomic.Int64 { return &s.RobotsRedirects }),
	{name: "petrel_hosts", help: "Visit states (one per host, or per politeness key of --assign), by state: active (with URLs to fetch, in the workbench) or idle.", kind: gauge,
		labels: []string{"state"}, points: func(src *Sources) []point {
			s := src.Stats
			active := s.ActiveKeys.Load()
			return []point{
				{v: float64(active), lv: []string{"active"}},
				{v: float64(max(s.VisitStates.Load()-active, 0)), lv: []string{"idle"}},
			}
		}},
	one("petrel_workbench_addresses", "IP addresses in the workbench.", gauge, func(s *stats.Crawl) *atomic.Int64 { return &s.IPEntries }),
	one("petrel_frontier_required_front", "Visit states the distributor keeps active.", gauge, func(s *stats.Crawl) *atomic.Int64 { return &s.RequiredFront }),
	{name: "petrel_workers", help: "Fetchers and parsers, by state: a fetcher is busy while a request of its is in flight.", kind: gauge,
		labels: []string{"pool", "state"}, points: func(src *Sources) []point {
			if src.Workers == nil {
				return nil
			}
			fetchers, parsers := src.Workers()
			busy := min(src.Stats.InFlight.Load(), int64(fetchers))
			return []point{
				{v: float64(busy), lv: []string{"fetcher", "busy"}},
				{v: float64(int64(fetchers) - busy), lv: []string{"fetcher", "idle"}},
				{v: float64(parsers), lv: []string{"parser", "total"}},
			}
		}},
	{name: "petrel_paused", help: "1 while the crawl is paused, 0 otherwise.", kind: gauge,
		points: func(src *Sources) []point {
			if src.Paused != nil && src.Paused() {
				return []point{{v: 1}}
			}
			return []point{{v: 0}}
		}},
	{name: "petrel_warc_records_total", help: "WARC records written, warcinfo records included.", kind: counter,
		points: func(src *Sources) []point {
			if src.WARC == nil {
				return nil
			}
			r, _ := src.WARC()
			return []point{{v: float64(r)}}
		}},
	{name: "petrel_warc_written_bytes_total", help: "Bytes appended to WARC files (compressed).", kind: counter,
		points: func(src *Sources) []point {
			if src.WARC == nil {
				return nil
			}
			_, b := src.WARC()
			return []point{{v: float64(b)}}
		}},
	{name: "petrel_log_lines_total", help: "Lines written to the crawl's line logs, by log: crawl (logs/crawl.log) or skipped (logs/skipped.jsonl).", kind: counter,
		labels: []string{"log"}, points: func(src *Sources) []point {
			if src.Logs == nil {
				return nil
			}
			f := src.Logs()
			return []point{{v: float64(f.CrawlLines), lv: []string{"crawl"}}, {v: float64(f.SkippedLines), lv: []string{"skipped"}}}
		}},
	{name: "petrel_log_lines_dropped_total", help: "Lines not written or not delivered, by where: skipped_cap (refusals past the skipped log's total cap, counted only), drop_log (URLs dropped in bulk past the frontier's drop log bounds, counted only) or stream (lines a slow follower of the crawl log missed).", kind: counter,
		labels: []string{"where"}, points: func(src *Sources) []point {
			if src.Logs == nil {
				return nil
			}
			f := src.Logs()
			return []point{{v: float64(f.SkippedDropped), lv: []string{"skipped_cap"}}, {v: float64(src.Stats.DropsUnlogged.Load()), lv: []string{"drop_log"}},
				{v: float64(f.StreamDropped), lv: []string{"stream"}}}
		}},
}

// clusterFamilies are the families of a crawl of several agents, served
// only when Sources.Cluster says the agent is one of several.
var clusterFamilies = []family{
	by("petrel_cluster_urls_total", "URLs exchanged with the other agents, by direction and kind: key (routed to the owner of their politeness key; forwarded: received for a key this agent no longer owns and sent on) or ready (new URLs handed to the agent fetching from their address).", counter, "flow", map[string]cf{
		"key_sent":       func(s *stats.Crawl) *atomic.Int64 { return &s.ClusterSent },
		"key_received":   func(s *stats.Crawl) *atomic.Int64 { return &s.ClusterReceived },
		"key_forwarded":  func(s *stats.Crawl) *atomic.Int64 { return &s.ClusterForwarded },
		"ready_sent":     func(s *stats.Crawl) *atomic.Int64 { return &s.ClusterReadySent },
		"ready_received": func(s *stats.Crawl) *atomic.Int64 { return &s.ClusterReadyReceived },
	}),
	{name: "petrel_cluster_members", help: "Agents in the ownership view in force.", kind: gauge,
		points: func(src *Sources) []point { f, _ := src.Cluster(); return []point{{v: float64(f.Members)}} }},
	{name: "petrel_cluster_outbox_batches", help: "Batches held in the durable outbox: sent to another agent and not yet acknowledged.", kind: gauge,
		points: func(src *Sources) []point { f, _ := src.Cluster(); return []point{{v: float64(f.OutboxBatches)}} }},
	{name: "petrel_cluster_stale_view_total", help: "Fencing by view: batches, hand-off parts and releases of a view older than the receiver's fence, refused by this agent (batches_refused, handoff_parts_refused, releases_refused), and this agent's refused so and sent again under its newer view (batches_rerouted, handoff_parts_recut).", kind: counter,
		labels: []string{"what"}, points: func(src *Sources) []point {
			f, _ := src.Cluster()
			return []point{{v: float64(f.StaleBatchesRefused), lv: []string{"batches_refused"}}, {v: float64(f.StaleBatchesRerouted), lv: []string{"batches_rerouted"}},
				{v: float64(f.StalePartsRefused), lv: []string{"handoff_parts_refused"}}, {v: float64(f.StaleReleasesRefused), lv: []string{"releases_refused"}},
				{v: float64(f.StaleRecut), lv: []string{"handoff_parts_recut"}}}
		}},
	{name: "petrel_cluster_outbox_bytes", help: "Bytes of the batches held in the durable outbox.", kind: gauge,
		points: func(src *Sources) []point { f, _ := src.Cluster(); return []point{{v: float64(f.OutboxBytes)}} }},
}

// revisitFamilies are the families of a revisit crawl, served only when
// Sources.Revisits says the crawl has a schedule.
var revisitFamilies = []family{
	{name: "petrel_revisit_urls", help: "URLs of the revisit schedule, by revisit_state: scheduled (all), issued (handed to the frontier, not yet fetched again), due (due now and not issued: overdue), due_hour (due within the next hour; due and due_hour counted up to 100,000).", kind: gauge,
		labels: []string{"revisit_state"}, points: func(src *Sources) []point {
			f, _ := src.Revisits()
			return []point{{v: float64(f.Scheduled), lv: []string{"scheduled"}}, {v: float64(f.Issued), lv: []string{"issued"}},
				{v: float64(f.Due), lv: []string{"due"}}, {v: float64(f.DueHour), lv: []string{"due_hour"}}}
		}},
	{name: "petrel_revisits_total", help: "Revisits done by this process, by outcome: not_modified (a 304), unchanged (a 200 of the same payload), changed (any other), skipped (a duplicate task for a due time done, not fetched).", kind: counter,
		labels: []string{"outcome"}, points: func(src *Sources) []point {
			f, _ := src.Revisits()
			return []point{{v: float64(f.NotModified), lv: []string{"not_modified"}}, {v: float64(f.Unchanged), lv: []string{"unchanged"}},
				{v: float64(max(f.Revisits-f.NotModified-f.Unchanged, 0)), lv: []string{"changed"}}, {v: float64(f.Skipped), lv: []string{"skipped"}}}
		}},
}

// crawlCollector reads families from the counters at each scrape.
type crawlCollector struct {
	src   Sources
	fams  []family
	descs []*prometheus.Desc // parallel to fams
	// clusterEnd ends the cluster's families in fams (they follow
	// families), served only while Sources.Cluster says so.
	clusterEnd int
}

func newCrawlCollector(src Sources) *crawlCollector {
	c := &crawlCollector{src: src, fams: families}
	if src.Cluster != nil {
		c.fams = append(append([]family(nil), families...), clusterFamilies...)
	}
	c.clusterEnd = len(c.fams)
	if src.Revisits != nil {
		if _, on := src.Revisits(); on {
			c.fams = append(append([]family(nil), c.fams...), revisitFamilies...)
		}
	}
	c.descs = make([]*prometheus.Desc, len(c.fams))
	for i, f := range c.fams {
		c.descs[i] = prometheus.NewDesc(f.name, f.help, f.labels, nil)
	}
	return c
}

// Describe sends the descriptor of every family.
func (c *crawlCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect reads every family's points.
func (c *crawlCollector) Collect(ch chan<- prometheus.Metric) {
	clustered := false
	if c.src.Cluster != nil {
		_, clustered = c.src.Cluster()
	}
	for i, f := range c.fams {
		if i >= len(families) && i < c.clusterEnd && !clustered {
			continue
		}
		for _, p := range f.points(&c.src) {
			ch <- prometheus.MustNewConstMetric(c.descs[i], f.kind, p.v, p.lv...)
		}
	}
}
