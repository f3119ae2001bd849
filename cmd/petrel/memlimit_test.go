package main

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
)

// TestMemoryLimitFollowsLiveHeap checks that the limit stays at the budget
// while the live heap is small, follows 1.5 times the live heap once it
// outgrows the budget, ignores changes of less than a tenth, comes back
// down to the budget, and logs each change.
func TestMemoryLimitFollowsLiveHeap(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	var log bytes.Buffer
	const mib = 1 << 20
	m := &memoryLimit{budget: 800 * mib, headroom: 1.5, log: &log}
	for _, step := range []struct{ live, want int64 }{
		{0, 800 * mib},
		{400 * mib, 800 * mib},
		{600 * mib, 900 * mib},
		{620 * mib, 900 * mib}, // 930 MiB: within a tenth
		{800 * mib, 1200 * mib},
		{100 * mib, 800 * mib},
	} {
		m.set(step.live)
		if got := debug.SetMemoryLimit(-1); got != step.want || m.current != step.want {
			t.Fatalf("live %d MiB: limit %d MiB (current %d), want %d MiB", step.live>>20, got>>20, m.current>>20, step.want>>20)
		}
	}
	if n := strings.Count(log.String(), "petrel: memory limit"); n != 3 {
		t.Errorf("%d changes logged, want 3:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), "900 MiB -> 1200 MiB (live heap 800 MiB, the crawl's budget 800 MiB)") {
		t.Errorf("log lacks the raise to 1200 MiB:\n%s", log.String())
	}
}

// TestMemoryLimitLeavesGOMEMLIMIT checks that an operator's GOMEMLIMIT is
// left as it is.
func TestMemoryLimitLeavesGOMEMLIMIT(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "1GiB")
	if m := newMemoryLimit(nil, nil); m != nil {
		t.Fatal("a limit was built despite GOMEMLIMIT")
	}
}
