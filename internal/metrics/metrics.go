package metrics

import (
	"net/http"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/petrel-crawler/petrel/internal/revisit"
	"github.com/petrel-crawler/petrel/internal/stats"
)

// Sources are where the collectors read the crawl's figures at scrape time.
// Stats is required; a nil function reports nothing (or zero, for Paused).
type Sources struct {
	Stats *stats.Crawl
	// Version is Petrel's version, for petrel_build_info.
	Version string
	// Workers returns the fetcher and parser pool sizes in force.
	Workers func() (fetchers, parsers int)
	// Paused reports whether the crawl is paused.
	Paused func() bool
	// WARC returns the WARC records written (warcinfo included) and the
	// bytes appended to WARC files so far.
	WARC func() (records, bytes int64)
	// Logs returns the figures of the crawl log and the skipped log.
	Logs func() LogFigures
	// Cluster returns the figures of the exchange between agents, and
	// false for an agent crawling alone (then no petrel_cluster_ metric
	// is served).
	Cluster func() (ClusterFigures, bool)
	// Revisits returns the figures of a revisit crawl's schedule, and
	// false for a crawl without --revisit (then no petrel_revisit_ metric
	// is served).
	Revisits func() (revisit.Figures, bool)
}

// ClusterFigures are an agent's view of a crawl of several agents.
type ClusterFigures struct {
	Members       int   // agents in the ownership view in force
	OutboxBatches int   // batches held in the outbox, sent and not yet acknowledged
	OutboxBytes   int64 // their bytes
	// Fencing by view: batches refused for an older view and this
	// agent's routed again; hand-off parts and releases refused so, and
	// this agent's cut again.
	StaleBatchesRefused, StaleBatchesRerouted           int64
	StalePartsRefused, StaleReleasesRefused, StaleRecut int64
}

// LogFigures are the counts of the crawl's line logs.
type LogFigures struct {
	CrawlLines     int64 // lines written to logs/crawl.log
	SkippedLines   int64 // lines written to logs/skipped.jsonl
	SkippedDropped int64 // refusals not written: past the skipped log's total cap
	StreamDropped  int64 // lines a slow subscriber of the crawl log missed
}

// Metrics is one crawl's registry, its collectors and the histograms the
// crawl observes into. Create it with New; its methods are safe for
// concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	fetchDuration prometheus.Histogram
	responseSize  prometheus.Histogram
	dnsDuration   prometheus.Histogram
}

// New creates the registry with the crawl's collectors, the Go runtime's
// and the process's.
func New(src Sources) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		fetchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "petrel_fetch_duration_seconds",
			Help:    "Time from the start of a request to the end of its response (robots.txt included).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
		responseSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "petrel_response_size_bytes",
			Help:    "Size of each response as transferred: status line, headers and body (robots.txt included).",
			Buckets: prometheus.ExponentialBuckets(256, 4, 10), // 256 B to 64 MiB
		}),
		dnsDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "petrel_dns_lookup_duration_seconds",
			Help:    "Time taken by each host name lookup of the DNS stage, failed ones included.",
			Buckets: []float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1, 5, 10},
		}),
	}
	m.reg.MustRegister(m.fetchDuration, m.responseSize, m.dnsDuration,
		newCrawlCollector(src),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfo(src.Version))
	return m
}

// Handler serves the registry in Prometheus's text (or negotiated) format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Register adds a collector, e.g. the cluster's exchange figures. It fails
// if a metric it describes is already registered.
func (m *Metrics) Register(c prometheus.Collector) error { return m.reg.Register(c) }

// Gatherer returns the registry (for tests and for exporting elsewhere).
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// ObserveFetch records one response: its duration and its size as
// transferred. A nil *Metrics does nothing.
func (m *Metrics) ObserveFetch(d time.Duration, size int) {
	if m == nil {
		return
	}
	m.fetchDuration.Observe(d.Seconds())
	m.responseSize.Observe(float64(size))
}

// ObserveDNS records the duration of one lookup. A nil *Metrics does
// nothing.
func (m *Metrics) ObserveDNS(d time.Duration) {
	if m == nil {
		return
	}
	m.dnsDuration.Observe(d.Seconds())
}

func buildInfo(version string) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "petrel_build_info",
		Help:        "Always 1; its labels name the Petrel version and the Go version that built it.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()},
	})
	g.Set(1)
	return g
}
