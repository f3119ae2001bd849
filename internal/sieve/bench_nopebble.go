//go:build !petrelbench

package sieve

import "context"

// BenchBaselines lists the baselines this build's RunBench can run: the
// Pebble one only with the petrelbench build tag (bench_pebble.go).
const BenchBaselines = "map"

// benchPebble is never reached: RunBench refuses the baseline first.
func benchPebble(context.Context, BenchOptions) (BenchResult, error) {
	return BenchResult{}, errNoPebble
}
