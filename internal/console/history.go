package console

import (
	"sync"
	"time"

	"github.com/petrel-crawler/petrel/internal/stats"
)

// Sample is one point of the rate history.
type Sample struct {
	Time        time.Time `json:"t"`
	PagesPerSec float64   `json:"pages_per_s"`
	BytesPerSec float64   `json:"bytes_per_s"`
	Errors      int64     `json:"errors"` // errors in the interval
}

// History keeps the rates of the last hour, one sample per interval, in a
// ring of fixed size. Safe for concurrent use.
type History struct {
	mu    sync.Mutex
	ring  []Sample
	next  int
	full  bool
	prev  stats.Snapshot
	prevT time.Time
}

// NewHistory returns a history of n samples.
func NewHistory(n int) *History { return &History{ring: make([]Sample, n)} }

// Observe records the rates since the previous observation.
func (h *History) Observe(now time.Time, s stats.Snapshot) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.prev != nil {
		dt := now.Sub(h.prevT).Seconds()
		if dt > 0 {
			h.ring[h.next] = Sample{
				Time:        now,
				PagesPerSec: float64(s["Fetched"]-h.prev["Fetched"]) / dt,
				BytesPerSec: float64(s["BytesReceived"]-h.prev["BytesReceived"]) / dt,
				Errors:      s.Errors() - h.prev.Errors(),
			}
			h.next = (h.next + 1) % len(h.ring)
			h.full = h.full || h.next == 0
		}
	}
	h.prev, h.prevT = s, now
}

// Samples returns the samples held, oldest first.
func (h *History) Samples() []Sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.full {
		return append([]Sample(nil), h.ring[:h.next]...)
	}
	return append(append([]Sample(nil), h.ring[h.next:]...), h.ring[:h.next]...)
}
