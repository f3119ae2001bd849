// Package clock is the crawl's source of time, an interface so that tests
// can move it by hand: the frontier's scheduler reads every time it
// compares from a Clock and waits on its timers, and the agent's periodic
// loops (checkpoints, the progress line) tick on one.
//
// System is the wall clock. Manual is a clock that moves only when Advance
// is called, for deterministic tests: a timer fires during the Advance that
// reaches its time, never before, and Next says when the next one is due,
// so that a test can wait until a goroutine has armed its timer.
package clock
