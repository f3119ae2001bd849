package frontier

import "time"

// Clock is the frontier's source of time: every time the scheduler compares
// (next fetch times, robots.txt expiry, DNS retries, flush gaps) is read
// from it, and its timers wake the scheduler. A nil Config.Clock is the
// system clock; tests give one they move by hand.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that sends on its channel once d has
	// passed on this clock.
	NewTimer(d time.Duration) Timer
}

// Timer is a Clock's timer, with time.Timer's semantics since Go 1.23: a
// Reset or Stop discards any tick not yet received.
type Timer interface {
	C() <-chan time.Time
	Reset(d time.Duration)
	Stop()
}

// systemClock is the wall clock (with its monotonic reading).
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) NewTimer(d time.Duration) Timer { return sysTimer{time.NewTimer(d)} }

type sysTimer struct{ t *time.Timer }

func (t sysTimer) C() <-chan time.Time   { return t.t.C }
func (t sysTimer) Reset(d time.Duration) { t.t.Reset(d) }
func (t sysTimer) Stop()                 { t.t.Stop() }
