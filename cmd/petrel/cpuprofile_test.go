package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCPUProfileWrittenAtStop: the CPU profile is written out (a gzipped
// profile, not an empty file) when the process is asked to stop, before
// it returns (a harness may kill it then), at its end, and when it ends
// before the profile's delay has passed.
func TestCPUProfileWrittenAtStop(t *testing.T) {
	dir := t.TempDir()
	written := func(path string) bool {
		b, err := os.ReadFile(path)
		return err == nil && bytes.HasPrefix(b, []byte{0x1f, 0x8b})
	}

	ctx, cancel := context.WithCancel(context.Background())
	signalled := filepath.Join(dir, "signalled.pprof")
	p, err := startCPUProfile(ctx, signalled, 0)
	if err != nil {
		t.Fatal(err)
	}
	cancel() // the first SIGINT or SIGTERM
	deadline := time.Now().Add(10 * time.Second)
	for !written(signalled) {
		if time.Now().After(deadline) {
			t.Fatal("no profile written within 10s of the stop signal")
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.stop() // the process's end after it: nothing more

	for _, delay := range []time.Duration{0, time.Hour} {
		path := filepath.Join(dir, "end-"+delay.String()+".pprof")
		p, err := startCPUProfile(context.Background(), path, delay)
		if err != nil {
			t.Fatal(err)
		}
		p.stop()
		p.stop()
		if !written(path) {
			t.Errorf("delay %v: no profile written at the end", delay)
		}
	}
}
