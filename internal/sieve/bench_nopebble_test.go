//go:build !petrelbench

package sieve

import (
	"context"
	"strings"
	"testing"
)

// TestBenchWithoutPebble: a build without the petrelbench tag has no
// Pebble baseline, and asking for it says how to get one.
func TestBenchWithoutPebble(t *testing.T) {
	if strings.Contains(BenchBaselines, "pebble") {
		t.Fatalf("BenchBaselines %q names pebble in a build without it", BenchBaselines)
	}
	var out strings.Builder
	err := RunBench(context.Background(), BenchOptions{Keys: 100, Dir: t.TempDir(), Baselines: []string{"map", "pebble"}, NoSync: true}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "-tags petrelbench") {
		t.Fatalf("RunBench with the pebble baseline: %v, want an error naming -tags petrelbench", err)
	}
	if out.Len() > 0 {
		t.Errorf("RunBench ran before refusing the baseline: %q", out.String())
	}
}
