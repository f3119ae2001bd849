package console

import (
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/stats"
)

func TestHistory(t *testing.T) {
	h := NewHistory(4)
	t0 := time.Now()
	for i := 0; i <= 6; i++ {
		h.Observe(t0.Add(time.Duration(i)*time.Second), stats.Snapshot{"Fetched": int64(10 * i * i), "BytesReceived": int64(100 * i)})
	}
	s := h.Samples()
	if len(s) != 4 {
		t.Fatalf("%d samples, ring of 4", len(s))
	}
	// Interval i (from i-1 to i) fetched 10(2i-1) pages: the last four are i = 3..6.
	for k, want := range []float64{50, 70, 90, 110} {
		if s[k].PagesPerSec != want || s[k].BytesPerSec != 100 {
			t.Errorf("sample %d: %v pages/s %v B/s, want %v and 100", k, s[k].PagesPerSec, s[k].BytesPerSec, want)
		}
	}
}
