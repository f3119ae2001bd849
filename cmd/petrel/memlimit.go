package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/petrel-crawler/petrel/internal/agent"
	"github.com/petrel-crawler/petrel/internal/clock"
)

// memoryLimitEvery is how often the memory limit follows the live heap.
const memoryLimitEvery = 5 * time.Second

// liveHeapMetric is the runtime's count of heap bytes marked live by the
// last garbage collection.
const liveHeapMetric = "/gc/heap/live:bytes"

// memoryLimit keeps the process's soft memory limit at the crawl's memory
// budget ([agent.Config.MemoryBudget]: workbench, URL cache, idle
// connections and a fixed part) or at headroom times the live heap,
// whichever is larger. The budget leaves out what grows with the hosts a
// crawl meets (visit states, per-key counts, robots.txt rules, the DNS
// cache); once the live heap nears a fixed limit the collector runs
// back to back, up to half the CPU, and the crawl slows as it grows.
// Following the live heap keeps the collector's pace that of GOGC while
// the budget still bounds a crawl whose heap is small.
//
// The zero value is not usable; build it with [newMemoryLimit].
type memoryLimit struct {
	budget   int64
	headroom float64
	current  int64
	log      io.Writer
}

// newMemoryLimit returns the limit for cfg, or nil when GOMEMLIMIT is set
// (the operator's limit stands, fixed).
func newMemoryLimit(cfg *agent.Config, log io.Writer) *memoryLimit {
	if os.Getenv("GOMEMLIMIT") != "" {
		return nil
	}
	return &memoryLimit{budget: cfg.MemoryBudget(), headroom: 1.5, log: log}
}

// set applies the limit for a live heap of live bytes. It changes the
// process's limit only when the new one differs from the current by more
// than a tenth (the first call always sets it), and logs each change
// after the first.
func (m *memoryLimit) set(live int64) {
	want := max(m.budget, int64(float64(live)*m.headroom))
	if m.current != 0 && want < m.current*11/10 && want > m.current*9/10 {
		return
	}
	if m.current != 0 {
		fmt.Fprintf(m.log, "petrel: memory limit %d MiB -> %d MiB (live heap %d MiB, the crawl's budget %d MiB)\n",
			m.current>>20, want>>20, live>>20, m.budget>>20)
	}
	m.current = want
	debug.SetMemoryLimit(want)
}

// follow sets the limit now and then every interval from the live heap,
// until ctx is done. A nil m does nothing.
func (m *memoryLimit) follow(ctx context.Context, every time.Duration) {
	if m == nil {
		return
	}
	sample := []metrics.Sample{{Name: liveHeapMetric}}
	m.set(0)
	clock.Every(ctx, every, func() {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			m.set(int64(sample[0].Value.Uint64()))
		}
	})
}

// limitMemory sets the process's soft memory limit to n bytes, unless
// GOMEMLIMIT says otherwise. Only the command sets it: the process is its.
func limitMemory(n int64) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(n)
	}
}
