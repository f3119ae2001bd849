package console

import (
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Bounds of what the console logs of a refused call or connection, which
// anyone who reaches its address can cause: at most refusalsPerSecond
// lines a second (the others are counted, and their number is logged with
// the next line), each value cut to maxLoggedBytes.
const (
	refusalsPerSecond = 10
	maxLoggedBytes    = 256
)

// refusalLog writes the console's refusals to the event log within the
// bounds above. Safe for concurrent use; the zero value needs its log set.
type refusalLog struct {
	log *slog.Logger

	mu       sync.Mutex
	second   time.Time // the second being counted
	logged   int       // lines written in it
	unlogged int64     // refusals not written since the last line
}

// warn logs msg with the key-value pairs kv (string values, cut to
// maxLoggedBytes), unless refusalsPerSecond lines were written in the
// second of now: then it counts it.
func (r *refusalLog) warn(now time.Time, msg string, kv ...string) {
	r.mu.Lock()
	if s := now.Truncate(time.Second); !s.Equal(r.second) {
		r.second, r.logged = s, 0
	}
	if r.logged >= refusalsPerSecond {
		r.unlogged++
		r.mu.Unlock()
		return
	}
	r.logged++
	unlogged := r.unlogged
	r.unlogged = 0
	r.mu.Unlock()
	args := make([]any, 0, len(kv)+2)
	for i := 0; i+1 < len(kv); i += 2 {
		args = append(args, kv[i], clip(kv[i+1]))
	}
	if unlogged > 0 {
		args = append(args, "unlogged before", unlogged)
	}
	r.log.Warn(msg, args...)
}

// clip cuts s to maxLoggedBytes (whole UTF-8 characters), saying how long
// it was.
func clip(s string) string {
	if len(s) <= maxLoggedBytes {
		return s
	}
	return strings.ToValidUTF8(s[:maxLoggedBytes], "") + "…(" + strconv.Itoa(len(s)) + " bytes)"
}
