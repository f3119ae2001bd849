package testweb

import (
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

// record appends h, or counts it as dropped.
//
// record stamps h.End itself, under the lock, so that the log is in End
// order (a time taken before the lock could let two handlers finishing
// together log in the opposite order of their ends).
func (l *hitLog) record(h Hit) {
	l.mu.Lock()
	h.End = time.Now()
	if len(l.hits) < l.max {
		l.hits = append(l.hits, h)
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
