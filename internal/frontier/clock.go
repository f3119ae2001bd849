package frontier

import "github.com/petrel-crawler/petrel/internal/clock"

// Clock is the frontier's source of time: every time the scheduler compares
// (next fetch times, robots.txt expiry, DNS retries, flush gaps) is read
// from it, and its timers wake the scheduler. A nil Config.Clock is the
// system clock; tests give one they move by hand (clock.Manual).
type Clock = clock.Clock

// Timer is a Clock's timer (see clock.Timer).
type Timer = clock.Timer
