package metrics

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/petrel-crawler/petrel/internal/revisit"
	"github.com/petrel-crawler/petrel/internal/stats"
)

// labelValues are the only label names a petrel_ metric may carry, with
// the values each may take: none holds a URL, a host or an address.
var labelValues = map[string][]string{
	"class":         {"1xx", "2xx", "3xx", "4xx", "5xx", "other"},
	"family":        {"text", "image", "application", "other"},
	"reason":        nil, // fixed by the families table; checked for shape below
	"kind":          {"payload", "text", "near"},
	"state":         {"ready", "queued_memory", "queued_disk", "in_flight", "active", "idle", "busy", "total"},
	"pool":          {"fetcher", "parser"},
	"log":           {"crawl", "skipped"},
	"where":         {"skipped_cap", "drop_log", "stream"},
	"stage":         {"schedule", "fetch", "parse", "follow", "store"},
	"flow":          {"key_sent", "key_received", "key_forwarded", "ready_sent", "ready_received"},
	"connection":    {"opened", "reused"},
	"handshake":     {"full", "resumed"},
	"revisit_state": {"scheduled", "issued", "due", "due_hour"},
	"outcome":       {"not_modified", "unchanged", "changed", "skipped"},
	"version":       nil,
	"goversion":     nil,
}

func scrape(t *testing.T, m *Metrics) []byte {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testMetrics() (*Metrics, *stats.Crawl) {
	var st stats.Crawl
	st.Status2xx.Store(7)
	st.Status4xx.Store(2)
	st.BytesReceived.Store(12345)
	st.Queued.Store(10)
	st.Virtualized.Store(4)
	st.InFlight.Store(3)
	st.VisitStates.Store(5)
	st.ActiveKeys.Store(2)
	st.FetcherWaitNano.Store(int64(1500 * time.Millisecond))
	m := New(Sources{
		Stats:   &st,
		Version: "0.0.0-test",
		Workers: func() (int, int) { return 8, 2 },
		Paused:  func() bool { return true },
		WARC:    func() (int64, int64) { return 11, 4096 },
		Logs:    func() LogFigures { return LogFigures{CrawlLines: 9, SkippedLines: 1} },
	})
	m.ObserveFetch(20*time.Millisecond, 3000)
	m.ObserveDNS(time.Millisecond)
	return m, &st
}

// TestPromlint lints what /metrics serves, over a real socket, and fails on
// any problem; it also holds the house rules promlint does not check.
func TestPromlint(t *testing.T) {
	m, _ := testMetrics()
	body := scrape(t, m)
	lintClean(t, body)
	mfs := parse(t, body)
	own := 0
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "petrel_") {
			if !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
				t.Errorf("metric %s: not petrel_, go_ or process_", name)
			}
			continue
		}
		own++
		if mf.GetType() == dto.MetricType_HISTOGRAM && !strings.HasSuffix(name, "_seconds") && !strings.HasSuffix(name, "_bytes") {
			t.Errorf("histogram %s: not in seconds or bytes", name)
		}
		for _, mt := range mf.GetMetric() {
			for _, lp := range mt.GetLabel() {
				allowed, ok := labelValues[lp.GetName()]
				if !ok {
					t.Errorf("metric %s: label %q is not one of the fixed labels", name, lp.GetName())
					continue
				}
				if allowed != nil && !contains(allowed, lp.GetValue()) {
					t.Errorf("metric %s: label %s=%q is not one of %v", name, lp.GetName(), lp.GetValue(), allowed)
				}
				if strings.ContainsAny(lp.GetValue(), "/:") && lp.GetName() != "goversion" {
					t.Errorf("metric %s: label %s=%q looks like a URL or an address", name, lp.GetName(), lp.GetValue())
				}
			}
		}
	}
	if own < 30 {
		t.Errorf("only %d petrel_ metrics served", own)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func parse(t *testing.T, body []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return mfs
}

// TestValues checks that the figures served are the counters' at scrape
// time, in base units.
func TestValues(t *testing.T) {
	m, st := testMetrics()
	st.Status2xx.Add(1) // after New: read at scrape time
	mfs := parse(t, scrape(t, m))
	value := func(name string, labels ...string) float64 {
		t.Helper()
		mf := mfs[name]
		if mf == nil {
			t.Fatalf("%s not served", name)
		}
	next:
		for _, mt := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range mt.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue next
				}
			}
			switch {
			case mt.Counter != nil:
				return mt.Counter.GetValue()
			case mt.Gauge != nil:
				return mt.Gauge.GetValue()
			case mt.Histogram != nil:
				return float64(mt.Histogram.GetSampleCount())
			}
		}
		t.Fatalf("%s%v not served", name, labels)
		return 0
	}
	checks := []struct {
		got, want float64
		what      string
	}{
		{value("petrel_pages_fetched_total", "class", "2xx"), 8, "2xx pages"},
		{value("petrel_pages_fetched_total", "class", "4xx"), 2, "4xx pages"},
		{value("petrel_received_bytes_total"), 12345, "bytes"},
		{value("petrel_frontier_urls", "state", "queued_memory"), 6, "queued in RAM"},
		{value("petrel_frontier_urls", "state", "queued_disk"), 4, "queued on disk"},
		{value("petrel_hosts", "state", "idle"), 3, "idle hosts"},
		{value("petrel_workers", "pool", "fetcher", "state", "busy"), 3, "busy fetchers"},
		{value("petrel_workers", "pool", "fetcher", "state", "idle"), 5, "idle fetchers"},
		{value("petrel_paused"), 1, "paused"},
		{value("petrel_warc_records_total"), 11, "WARC records"},
		{value("petrel_fetcher_wait_seconds_total"), 1.5, "fetcher wait"},
		{value("petrel_fetch_duration_seconds"), 1, "fetch observations"},
		{value("petrel_dns_lookup_duration_seconds"), 1, "DNS observations"},
		{value("petrel_build_info", "version", "0.0.0-test"), 1, "build info"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
		}
	}
}

// TestCluster: an agent of several serves the exchange's figures (the
// fencing by view's counts among them), lint clean; an agent alone serves
// none.
func TestCluster(t *testing.T) {
	var st stats.Crawl
	st.ClusterSent.Store(5)
	m := New(Sources{Stats: &st, Version: "x", Cluster: func() (ClusterFigures, bool) {
		return ClusterFigures{Members: 3, OutboxBatches: 2, OutboxBytes: 900, StaleBatchesRefused: 4, StaleBatchesRerouted: 6,
			StalePartsRefused: 7, StaleReleasesRefused: 8, StaleRecut: 9}, true
	}})
	body := scrape(t, m)
	lintClean(t, body)
	for _, want := range []string{"petrel_cluster_members 3", "petrel_cluster_outbox_batches 2", "petrel_cluster_outbox_bytes 900",
		`petrel_cluster_urls_total{flow="key_sent"} 5`,
		`petrel_cluster_stale_view_total{what="batches_refused"} 4`, `petrel_cluster_stale_view_total{what="batches_rerouted"} 6`,
		`petrel_cluster_stale_view_total{what="handoff_parts_refused"} 7`, `petrel_cluster_stale_view_total{what="releases_refused"} 8`,
		`petrel_cluster_stale_view_total{what="handoff_parts_recut"} 9`} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("no %q in /metrics", want)
		}
	}
	alone, _ := testMetrics()
	if bytes.Contains(scrape(t, alone), []byte("petrel_cluster_")) {
		t.Error("an agent alone serves petrel_cluster_ metrics")
	}
}

// lintClean fails t on every problem promlint finds in body.
func lintClean(t *testing.T, body []byte) {
	t.Helper()
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// TestRevisits: a revisit crawl serves its schedule's figures, lint-clean
// and with the fixed labels; a crawl without --revisit serves none.
func TestRevisits(t *testing.T) {
	var st stats.Crawl
	m := New(Sources{Stats: &st, Version: "x", Revisits: func() (revisit.Figures, bool) {
		return revisit.Figures{Scheduled: 40, Issued: 3, Due: 2, DueHour: 9, Revisits: 20, NotModified: 12, Unchanged: 5, Skipped: 1}, true
	}})
	body := scrape(t, m)
	lintClean(t, body)
	for _, want := range []string{`petrel_revisit_urls{revisit_state="scheduled"} 40`, `petrel_revisit_urls{revisit_state="due_hour"} 9`,
		`petrel_revisits_total{outcome="not_modified"} 12`, `petrel_revisits_total{outcome="changed"} 3`, `petrel_revisits_total{outcome="skipped"} 1`} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("no %q in /metrics", want)
		}
	}
	for name, mf := range parse(t, body) {
		for _, mt := range mf.GetMetric() {
			for _, lp := range mt.GetLabel() {
				if allowed, ok := labelValues[lp.GetName()]; !ok || allowed != nil && !contains(allowed, lp.GetValue()) {
					t.Errorf("metric %s: label %s=%q", name, lp.GetName(), lp.GetValue())
				}
			}
		}
	}
	off := New(Sources{Stats: &st, Version: "x", Revisits: func() (revisit.Figures, bool) { return revisit.Figures{}, false }})
	if bytes.Contains(scrape(t, off), []byte("petrel_revisit")) {
		t.Error("a crawl without --revisit serves petrel_revisit metrics")
	}
}

// TestRegister checks the extension point: another part's collector is
// served, and a clash of names is refused.
func TestRegister(t *testing.T) {
	m, _ := testMetrics()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "petrel_cluster_members", Help: "Agents in the cluster."})
	g.Set(3)
	if err := m.Register(g); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(scrape(t, m), []byte("petrel_cluster_members 3")) {
		t.Error("registered collector not served")
	}
	dup := prometheus.NewGauge(prometheus.GaugeOpts{Name: "petrel_paused", Help: "clash"})
	if err := m.Register(dup); err == nil {
		t.Error("a second petrel_paused was accepted")
	}
}

// BenchmarkObserveFetch is the crawl's cost per response of the
// histograms.
func BenchmarkObserveFetch(b *testing.B) {
	m, _ := testMetrics()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.ObserveFetch(12*time.Millisecond, 20000)
		}
	})
}
