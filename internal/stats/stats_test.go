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
	for _, want := range []string{"pages 300 (100/s)", "1.0 MiB/s", "known 1000", "errors 3"} {
		if !strings.Contains(l, want) {
			t.Errorf("progress line %q lacks %q", l, want)
		}
	}
	if strings.Contains(l, "\n") {
		t.Errorf("progress line spans lines: %q", l)
	}
	sum := Summary(cur, 3*time.Second)
	if !strings.Contains(sum, "pages fetched      300 (100.0/s)") {
		t.Errorf("summary:\n%s", sum)
	}
}
