package clock

import (
	"context"
	"time"
)

// Every calls f every d of wall-clock time, the first time d after the
// call, until ctx is done, and returns then. A call of f that outlasts d
// delays the next one rather than queueing ticks (a time.Ticker drops
// them), so calls never overlap.
func Every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}
