package agent

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/stats"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestMetricsOfACrawl scrapes /metrics after a crawl with a console (the
// histograms are observed only when it serves them): what it serves lints
// clean and agrees with the crawl's counters.
func TestMetricsOfACrawl(t *testing.T) {
	c := newTestCrawl(t, "127.61.0.1", 4, 10, func(cfg *Config, _ *testweb.Web) { cfg.Console.Addr = "127.0.0.1:0" })
	c.run(t)
	srv := httptest.NewServer(c.a.Metrics().Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	st := c.a.Stats()
	sum := func(re string) int64 {
		var n int64
		for _, m := range regexp.MustCompile(`(?m)^`+re+` (\S+)$`).FindAllSubmatch(body, -1) {
			v, _ := strconv.ParseFloat(string(m[1]), 64)
			n += int64(v)
		}
		return n
	}
	if got, want := sum(`petrel_pages_fetched_total\{class="\w+"\}`), st.Fetched.Load(); got != want || want == 0 {
		t.Errorf("petrel_pages_fetched_total sums to %d, the crawl fetched %d pages", got, want)
	}
	if got, want := sum(`petrel_fetch_duration_seconds_count`), st.Fetched.Load()+st.RobotsFetched.Load(); got != want {
		t.Errorf("fetch duration observed %d times, want %d (pages and robots.txt)", got, want)
	}
	if got := sum(`petrel_warc_records_total`); got < st.Stored.Load() {
		t.Errorf("petrel_warc_records_total %d < %d response records", got, st.Stored.Load())
	}
	if got := sum(`petrel_dns_lookup_duration_seconds_count`); got < 4 {
		t.Errorf("%d DNS lookups observed for 4 hosts", got)
	}
}

// TestClusterSummaryFencing: the summary's cluster line gives the counts
// of fencing by view, each in its place.
func TestClusterSummaryFencing(t *testing.T) {
	line := clusterSummary(stats.Snapshot{}, cluster.Fenced{RefusedBatches: 4, ReroutedBatches: 6, RefusedParts: 7, RefusedReleases: 8, Recut: 9})
	want := "of an older view: 4 batches refused, 6 re-routed, 7 hand-off parts and 8 releases refused, 9 cut again"
	if !strings.Contains(line, want) {
		t.Errorf("summary line %q lacks %q", line, want)
	}
}
