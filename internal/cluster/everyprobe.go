package cluster

import (
	"context"
	"time"

	"github.com/petrel-crawler/petrel/internal/clock"
)

// everyProbe returns a loop for goLoop that calls round once a probe
// interval (at least 50 ms apart), the first time one interval after it
// starts, until ctx is done. round gets the loop's ctx and returns before
// the next tick is read, so rounds never overlap; a slow round delays the
// next one rather than queueing ticks.
func (n *Node) everyProbe(round func(context.Context)) func(context.Context) {
	return func(ctx context.Context) {
		clock.Every(ctx, max(n.cfg.Timing.probe(), 50*time.Millisecond), func() { round(ctx) })
	}
}
