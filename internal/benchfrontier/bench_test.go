package benchfrontier

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime/debug"
	"testing"
	"time"
)

// TestRunSmall runs the benchmark on a tiny shape: it must schedule every
// URL with no politeness violation, queue every URL of the memory phase,
// and report figures that hold together.
func TestRunSmall(t *testing.T) {
	limit := debug.SetMemoryLimit(-1)
	var js, table bytes.Buffer
	err := Run(context.Background(), Options{Keys: 50, URLs: 1000, QueuedURLs: 5000, HostDelay: 2 * time.Millisecond,
		IPDelay: time.Millisecond, Fetchers: 8, WorkbenchBytes: 64 << 10, Dir: t.TempDir(), Timeout: time.Minute}, &js, &table)
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	if err := json.Unmarshal(js.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != limit {
		t.Errorf("Run changed the process's memory limit from %d to %d: only the command may", limit, got)
	}
	if r.Violations != 0 {
		t.Errorf("%d politeness violations", r.Violations)
	}
	if r.URLs != 1000 || r.ScheduledPerSec <= 0 {
		t.Errorf("throughput phase: %d URLs at %.0f/s", r.URLs, r.ScheduledPerSec)
	}
	if r.QueuedInRAM+r.Virtualized != 5000 || r.Virtualized == 0 {
		t.Errorf("memory phase: %d in RAM + %d virtualized, want 5000 with some virtualized (64 KiB budget)", r.QueuedInRAM, r.Virtualized)
	}
	if r.CheckpointTodo+r.CheckpointVirtual != 5000 || r.CheckpointVirtual != r.Virtualized {
		t.Errorf("checkpoint saved %d URLs + %d virtualized, want 5000 with the %d virtualized", r.CheckpointTodo, r.CheckpointVirtual, r.Virtualized)
	}
	if !bytes.Contains(table.Bytes(), []byte("politeness violations")) {
		t.Errorf("no table:\n%s", table.String())
	}
}

// TestMemoryLimit checks the limit the command sets for the benchmark: the
// workbench budget (512 MiB by default) plus the agent's fixed allowance.
func TestMemoryLimit(t *testing.T) {
	if got := (Options{}).MemoryLimit(); got != 512<<20+192<<20 {
		t.Errorf("default: %d", got)
	}
	if got := (Options{WorkbenchBytes: 64 << 20}).MemoryLimit(); got != 64<<20+192<<20 {
		t.Errorf("64 MiB workbench: %d", got)
	}
}
