package stats

import (
	"strings"
	"testing"
	"time"
)

func TestSnapshotRestore(t *testing.T) {
	var c Crawl
	c.Fetched.Store(10)
	c.Queued.Store(99) // a gauge
	c.CountStatus(404)
	c.CountStatus(200)
	c.CountContentType("Text/HTML; charset=utf-8")
	c.CountContentType("image/png")
	s := c.Snapshot()
	if s["Fetched"] != 10 || s["Status4xx"] != 1 || s["Status2xx"] != 1 || s["ContentText"] != 1 || s["ContentImage"] != 1 {
		t.Fatalf("snapshot %v", s)
	}
	var d Crawl
	d.Queued.Store(5)
	d.Restore(s)
	if d.Fetched.Load() != 10 {
		t.Errorf("Restore lost a counter: Fetched %d", d.Fetched.Load())
	}
	if d.Queued.Load() != 5 {
		t.Errorf("Restore overwrote a gauge: Queued %d", d.Queued.Load())
	}
}

func TestLineAndSummary(t *testing.T) {
	prev := Snapshot{"Fetched": 100, "BytesReceived": 0}
	cur := Snapshot{"Fetched": 300, "BytesReceived": 2 << 20, "SieveNew": 1000, "FetchErrors": 3}
	l := Line(cur, prev, 2*time.Second)
	for _, want := range []string{"pages 300 (100/s)", "1.0 MiB/s", "known 1000 ready", "errors 3"} {
		if !strings.Contains(l, want) {
			t.Errorf("progress line %q lacks %q", l, want)
		}
	}
	// Half a page a second is not 0/s; keys the sieve has taken and not
	// yet checked are shown beside the URLs known, which its flushes count.
	slow := Snapshot{"Fetched": 101, "SieveNew": 1000, "SieveBuffered": 56}
	l2 := Line(slow, prev, 2*time.Second)
	for _, want := range []string{"pages 101 (0.5/s)", "known 1000 (+56 in the sieve, not yet checked) ready"} {
		if !strings.Contains(l2, want) {
			t.Errorf("progress line %q lacks %q", l2, want)
		}
	}
	if strings.Contains(l, "\n") {
		t.Errorf("progress line spans lines: %q", l)
	}
	if strings.Contains(l, "sent") {
		t.Errorf("a single agent's progress line has the exchange's counts: %q", l)
	}
	c := Snapshot{"ClusterSent": 5, "ClusterReceived": 7, "ClusterForwarded": 2, "ClusterReadySent": 3, "ClusterReadyReceived": 4}
	if l := Line(c, nil, time.Second); !strings.HasSuffix(l, " | sent 5 recv 7 fwd 2 handed 3/4") {
		t.Errorf("an agent's progress line %q does not end with its exchange's counts", l)
	}
	// A resumed run: 100 pages came from earlier runs, 200 from this one.
	cur["Runs"], cur["FetcherWaitNano"], cur["FetcherWaits"] = 2, int64(3*time.Second), 30
	sum := Summary(Run{Head: "crawl stopped after 2s", Next: "stopped: 7 URLs queued; run the same command to resume",
		Start: prev, End: cur, Elapsed: 2 * time.Second, Fetchers: 3})
	for _, want := range []string{"crawl stopped after 2s\n", "this run           200 pages (100.0/s)",
		"crawl total        300 pages over 2 runs", "fetchers waited    50% of the time for a host's politeness delay to pass (100 ms a wait on average)",
		"\nstopped: 7 URLs queued; run the same command to resume"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
}

// TestKindsAndVersion checks the declared kinds, that gauges are not
// restored, that stats.json carries its version, and that a counter renamed
// in a later version is carried over, not lost.
func TestKindsAndVersion(t *testing.T) {
	if !IsGauge("Queued") || IsGauge("Fetched") || IsGauge("NoSuchCounter") {
		t.Error("kinds: Queued is a gauge, Fetched a counter")
	}
	var b strings.Builder
	Snapshot{"Fetched": 5, "Queued": 9}.WriteJSON(&b)
	if !strings.Contains(b.String(), `"StatsVersion": 1`) {
		t.Errorf("stats.json lacks its version: %s", b.String())
	}
	var c Crawl
	c.Restore(Snapshot{"Fetched": 5, "Queued": 9, "StatsVersion": 1})
	if c.Fetched.Load() != 5 || c.Queued.Load() != 0 {
		t.Errorf("Restore: Fetched %d (want 5), gauge Queued %d (want 0)", c.Fetched.Load(), c.Queued.Load())
	}
	renames := map[int64]map[string]string{2: {"Pages": "Fetched"}, 3: {"Fetched": "PagesFetched"}}
	got := migrateTo(Snapshot{"Pages": 7, "Stored": 3}, 3, renames)
	if got["PagesFetched"] != 7 || got["Stored"] != 3 || len(got) != 2 {
		t.Errorf("a version-1 snapshot migrated to %v", got)
	}
	if got := migrateTo(Snapshot{"Fetched": 4, "StatsVersion": 2}, 3, renames); got["PagesFetched"] != 4 {
		t.Errorf("a version-2 snapshot migrated to %v", got)
	}
}

// TestWords: durations said as a person reads them.
func TestWords(t *testing.T) {
	for d, want := range map[time.Duration]string{
		3*time.Minute + 23*time.Second + 400*time.Millisecond: "3 min 23 s",
		2 * time.Minute:                            "2 min",
		2*time.Hour + 5*time.Minute:                "2 h 5 min",
		1500 * time.Millisecond:                    "1.5 s",
		42 * time.Second:                           "42 s",
		40*time.Millisecond + 300*time.Microsecond: "40 ms",
		250 * time.Microsecond:                     "250 µs",
	} {
		if got := Words(d); got != want {
			t.Errorf("Words(%v) = %q, want %q", d, got, want)
		}
	}
}
