package testweb

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
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

// WriteHitLog writes the request log, in End order, to path: one JSON
// object a line (the Hit's fields), through a temporary file renamed into
// place, so that a reader never sees half a log. A process serving the
// web writes it once stopped (petrel testweb --hit-log); ReadHitLog reads
// it back. It fails if the log dropped hits (MaxHits).
func (w *Web) WriteHitLog(path string) error { return w.log.write(path) }

// WriteHitLog is [Web.WriteHitLog] for the generated web (its log kept
// with [GenServeOptions.LogHits]).
func (w *GenWeb) WriteHitLog(path string) error { return w.log.write(path) }

// write writes the log to path; see [Web.WriteHitLog].
func (l *hitLog) write(path string) error {
	if n := l.droppedHits(); n > 0 {
		return fmt.Errorf("testweb: write hit log: %d hits were not kept (MaxHits)", n)
	}
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return fmt.Errorf("testweb: write hit log: %w", err)
	}
	bw := bufio.NewWriter(f)
	enc := json.NewEncoder(bw)
	for _, h := range l.all() {
		if err = enc.Encode(h); err != nil {
			break
		}
	}
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(path+".tmp", path)
	}
	if err != nil {
		return fmt.Errorf("testweb: write hit log: %w", err)
	}
	return nil
}

// ReadHitLog reads a request log written by WriteHitLog. Its times carry
// no monotonic reading: they compare by the wall clock, which the web's
// own times were also read from.
func ReadHitLog(path string) ([]Hit, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("testweb: read hit log: %w", err)
	}
	defer f.Close()
	var out []Hit
	dec := json.NewDecoder(bufio.NewReader(f))
	for {
		var h Hit
		if err := dec.Decode(&h); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("testweb: read hit log %s, hit %d: %w", path, len(out)+1, err)
		}
		out = append(out, h)
	}
}
