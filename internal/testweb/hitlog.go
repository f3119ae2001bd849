package testweb

import (
	"slices"
	"sync"
	"time"
)

// hitLog is a request log capped at max entries; hits beyond it are
// counted, not kept. Its methods are safe for concurrent use.
type hitLog struct {
	max     int
	mu      sync.Mutex
	hits    []Hit
	dropped int64
}

// record adds h in End order (h.End zero: now), or counts it as dropped.
// Hits come in nearly in End order, so the place is searched from the end.
func (l *hitLog) record(h Hit) {
	l.mu.Lock()
	if h.End.IsZero() {
		h.End = time.Now()
	}
	if len(l.hits) < l.max {
		i := len(l.hits)
		for i > 0 && h.End.Before(l.hits[i-1].End) {
			i--
		}
		l.hits = slices.Insert(l.hits, i, h)
	} else {
		l.dropped++
	}
	l.mu.Unlock()
}

// all returns a copy of the log in End order.
func (l *hitLog) all() []Hit {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Hit(nil), l.hits...)
}

// droppedHits returns how many hits were not kept.
func (l *hitLog) droppedHits() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}

// reset empties the log and the dropped count.
func (l *hitLog) reset() {
	l.mu.Lock()
	l.hits, l.dropped = nil, 0
	l.mu.Unlock()
}
