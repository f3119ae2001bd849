//go:build petrelbench

package sieve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cockroachdb/pebble"
)

// The Pebble baseline of RunBench: built only with the petrelbench tag
// (go build -tags petrelbench ./cmd/petrel), so that petrel itself does
// not link an LSM tree and cgo for a benchmark.

// BenchBaselines lists the baselines this build's RunBench can run.
const BenchBaselines = "map,pebble"

// benchPebble is the seen-set a user would build on an embedded key-value
// store: Get the hash, Set it (without sync) if absent.
func benchPebble(ctx context.Context, opts BenchOptions) (BenchResult, error) {
	r := BenchResult{Name: "pebble"}
	dir := filepath.Join(opts.Dir, "pebble")
	os.RemoveAll(dir)
	defer os.RemoveAll(dir)
	ps := startSampler()
	start := time.Now()
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		return r, fmt.Errorf("sieve: bench: pebble: %w", err)
	}
	g := newKeyStream(opts.DupRatio)
	var deadline time.Time
	if opts.BaselineTimeout > 0 {
		deadline = start.Add(opts.BaselineTimeout)
	}
	var kb [8]byte
	i := 0
	for ; i < opts.Keys; i++ {
		if i&0xfff == 0 {
			if ctx.Err() != nil {
				db.Close()
				return r, ctx.Err()
			}
			if !deadline.IsZero() && time.Now().After(deadline) {
				r.StoppedAtTimeLimit = true
				break
			}
		}
		h := Hash(g.next())
		for j := range kb {
			kb[j] = byte(h >> (56 - 8*j))
		}
		_, closer, err := db.Get(kb[:])
		if err == nil {
			closer.Close()
			continue
		}
		if !errors.Is(err, pebble.ErrNotFound) {
			db.Close()
			return r, fmt.Errorf("sieve: bench: pebble: %w", err)
		}
		if err := db.Set(kb[:], nil, pebble.NoSync); err != nil {
			db.Close()
			return r, fmt.Errorf("sieve: bench: pebble: %w", err)
		}
		r.Distinct++
	}
	if err := db.Flush(); err != nil {
		db.Close()
		return r, fmt.Errorf("sieve: bench: pebble: %w", err)
	}
	if err := db.Close(); err != nil {
		return r, fmt.Errorf("sieve: bench: pebble: %w", err)
	}
	r.Seconds = time.Since(start).Seconds()
	ps.finish(&r)
	r.Keys = int64(i)
	r.KeysPerSec = float64(r.Keys) / r.Seconds
	r.DiskBytesPerKey = float64(dirBytes(dir)) / float64(max(r.Distinct, 1))
	return r, nil
}
