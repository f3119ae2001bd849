//go:build !petrelcrash

package agent

// crashPoint is empty without the petrelcrash tag: no fault injection is
// compiled in (see crashpoint.go).
type crashPoint struct{}

// newCrashPoint is always nil without the petrelcrash tag.
func newCrashPoint() *crashPoint { return nil }

// reach does nothing without the petrelcrash tag.
func (*crashPoint) reach(string) {}
