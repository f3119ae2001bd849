//go:build race

package physlimit

// raceEnabled says the race detector is on: TestSample's generation and
// compression of the sample then take tens of seconds, for a law that
// does not depend on it.
const raceEnabled = true
