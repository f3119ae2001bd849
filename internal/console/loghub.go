package console

import (
	"sync"
)

// LogHub passes crawl log lines to the event streams that follow them and
// keeps the most recent ones for a stream that starts. A slow follower
// never slows the crawl: a line that does not fit in its buffer is dropped
// and counted. Safe for concurrent use; the zero value is not usable (see
// NewLogHub).
type LogHub struct {
	mu    sync.Mutex
	ring  []string
	next  int
	full  bool
	subs  map[*follower]struct{}
	lines int64
}

type follower struct {
	c       chan string
	dropped int64 // lines lost because c was full (under LogHub.mu)
}

// Bounds of the hub.
const (
	followBuffer = 1024 // lines buffered per follower
	maxFollowers = 16
)

// NewLogHub returns a hub keeping the last n lines.
func NewLogHub(n int) *LogHub {
	return &LogHub{ring: make([]string, n), subs: map[*follower]struct{}{}}
}

// Line passes one line (without its newline) on.
func (h *LogHub) Line(line string) {
	h.mu.Lock()
	h.lines++
	h.ring[h.next] = line
	h.next = (h.next + 1) % len(h.ring)
	h.full = h.full || h.next == 0
	for f := range h.subs {
		select {
		case f.c <- line:
		default:
			f.dropped++
		}
	}
	h.mu.Unlock()
}

// Write takes newline-separated lines (an io.Writer for log handlers that
// write one line per call).
func (h *LogHub) Write(p []byte) (int, error) {
	start := 0
	for i, c := range p {
		if c == '\n' {
			if i > start {
				h.Line(string(p[start:i]))
			}
			start = i + 1
		}
	}
	if start < len(p) {
		h.Line(string(p[start:]))
	}
	return len(p), nil
}

// Recent returns up to n of the last lines, oldest first.
func (h *LogHub) Recent(n int) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var all []string
	if h.full {
		all = append(append(all, h.ring[h.next:]...), h.ring[:h.next]...)
	} else {
		all = append(all, h.ring[:h.next]...)
	}
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return all
}

// follow subscribes a follower; ok is false when too many follow already.
func (h *LogHub) follow() (*follower, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) >= maxFollowers {
		return nil, false
	}
	f := &follower{c: make(chan string, followBuffer)}
	h.subs[f] = struct{}{}
	return f, true
}

// unfollow ends a subscription and returns the lines it lost.
func (h *LogHub) unfollow(f *follower) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, f)
	return f.dropped
}

// takeDropped returns and resets the lines f lost so far.
func (h *LogHub) takeDropped(f *follower) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := f.dropped
	f.dropped = 0
	return d
}
