//go:build !petrelcrash

package agent

import "testing"

// TestNoCrashPointInProduction: a build without the petrelcrash tag (petrel
// as shipped) ignores PETREL_CRASH_AT: no environment variable kills it.
func TestNoCrashPointInProduction(t *testing.T) {
	t.Setenv("PETREL_CRASH_AT", "checkpoint:1")
	if c := newCrashPoint(); c != nil {
		t.Fatalf("PETREL_CRASH_AT armed a crash point in a build without the petrelcrash tag: %+v", c)
	}
}
