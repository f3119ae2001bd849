package frontier

import (
	"math"
	"time"

	"github.com/petrel-crawler/petrel/internal/clock"
)

// Clock is the frontier's source of time: every time the scheduler compares
// (next fetch times, robots.txt expiry, DNS retries, flush gaps) is read
// from it, and its timers wake the scheduler. A nil Config.Clock is the
// system clock; tests give one they move by hand (clock.Manual).
type Clock = clock.Clock

// Timer is a Clock's timer (see clock.Timer).
type Timer = clock.Timer

// later returns t+d on the frontier's clock (nanoseconds since its base),
// saturating at the ends of int64 instead of wrapping: a delay too long for
// the clock means "never", not "long ago". The settings bound every delay,
// so only a caller that skipped them meets the saturation.
func later(t int64, d time.Duration) int64 {
	switch {
	case d > 0 && t > math.MaxInt64-int64(d):
		return math.MaxInt64
	case d < 0 && t < math.MinInt64-int64(d):
		return math.MinInt64
	}
	return t + int64(d)
}
