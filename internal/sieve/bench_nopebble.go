//go:build !petrelbench

package sieve

import (
	"context"
	"errors"
)

// BenchBaselines lists the baselines this build's RunBench can run: the
// Pebble one only with the petrelbench build tag (bench_pebble.go).
const BenchBaselines = "map"

// errNoPebble is RunBench's answer to the Pebble baseline in a build
// without it.
var errNoPebble = errors.New("sieve: bench: the pebble baseline is not in this build: build petrel with -tags petrelbench (go build -tags petrelbench ./cmd/petrel)")

func benchPebble(context.Context, BenchOptions) (BenchResult, error) {
	return BenchResult{}, errNoPebble
}
