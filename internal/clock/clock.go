package clock

import (
	"sync"
	"time"
)

// Clock is a source of time and timers.
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

// System is the wall clock (with its monotonic reading).
var System Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) NewTimer(d time.Duration) Timer { return sysTimer{time.NewTimer(d)} }

// Since returns the time passed on c since t, a reading of c. On System,
// for a t with a monotonic reading, it is time.Since, which reads only the
// monotonic clock (c.Now also reads the wall clock).
func Since(c Clock, t time.Time) time.Duration {
	if _, ok := c.(systemClock); ok {
		return time.Since(t)
	}
	return c.Now().Sub(t)
}

type sysTimer struct{ t *time.Timer }

func (t sysTimer) C() <-chan time.Time   { return t.t.C }
func (t sysTimer) Reset(d time.Duration) { t.t.Reset(d) }
func (t sysTimer) Stop()                 { t.t.Stop() }

// Manual is a Clock moved by hand (Advance). Safe for concurrent use.
type Manual struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

// NewManual returns a Manual clock reading start.
func NewManual(start time.Time) *Manual { return &Manual{now: start} }

// Now returns the clock's time.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer due d from now.
func (c *Manual) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{c: c, ch: make(chan time.Time, 1), at: c.now.Add(d), on: true}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the clock by d and fires the timers that are due.
func (c *Manual) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.timers {
		if t.on && !t.at.After(c.now) {
			t.on = false
			select {
			case t.ch <- c.now:
			default:
			}
		}
	}
}

// Next returns when the earliest armed timer is due (ok false: none is).
func (c *Manual) Next() (at time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.timers {
		if t.on && (!ok || t.at.Before(at)) {
			at, ok = t.at, true
		}
	}
	return at, ok
}

type manualTimer struct {
	c  *Manual
	ch chan time.Time
	at time.Time
	on bool
}

func (t *manualTimer) C() <-chan time.Time { return t.ch }

func (t *manualTimer) Reset(d time.Duration) {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.drain()
	t.at, t.on = t.c.now.Add(d), true
}

func (t *manualTimer) Stop() {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.drain()
	t.on = false
}

func (t *manualTimer) drain() {
	select {
	case <-t.ch:
	default:
	}
}
