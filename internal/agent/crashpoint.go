package agent

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/petrel-crawler/petrel/internal/sieve"
)

// Fault injection for the crash tests: PETREL_CRASH_AT=point:N makes the
// process kill itself with SIGKILL the N-th time it reaches point, so that
// a test can crash it exactly inside a checkpoint or a sieve flush. Unset
// (always, outside tests) it costs one comparison.
//
// Points: "checkpoint" (a checkpoint folder half written, before its
// rename), "sieve-flush" (a sieve flow half delivered) and
// "handoff-release" (a hand-off's release acknowledged by one new owner,
// the others' not sent yet), "leave-checkpoint" (a leave's requests in
// flight ended, its checkpoint not begun) and "leave-moved" (a leave's
// queued URLs moved out into the outbox, its releases not sent).
type crashPoint struct {
	name string
	at   int64
	n    atomic.Int64
}

func newCrashPoint() *crashPoint {
	v := os.Getenv("PETREL_CRASH_AT")
	name, num, ok := strings.Cut(v, ":")
	if !ok {
		return nil
	}
	at, err := strconv.ParseInt(num, 10, 64)
	if err != nil || at < 1 {
		return nil
	}
	return &crashPoint{name: name, at: at}
}

// reach kills the process at the configured point.
func (c *crashPoint) reach(name string) {
	if c == nil || c.name != name || c.n.Add(1) != c.at {
		return
	}
	fmt.Fprintf(os.Stderr, "petrel: PETREL_CRASH_AT: killing myself at %s #%d\n", name, c.at)
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// crashingReceiver is a sieve receiver that reaches "sieve-flush" in the
// middle of a flow.
type crashingReceiver struct {
	sieve.NewFlowReceiver
	c *crashPoint
	n int
}

func (r *crashingReceiver) Append(hash uint64, key []byte) error {
	if err := r.NewFlowReceiver.Append(hash, key); err != nil {
		return err
	}
	if r.n++; r.n == 3 {
		r.c.reach("sieve-flush")
	}
	return nil
}

func (r *crashingReceiver) FinishedAppending() error {
	r.n = 0
	return r.NewFlowReceiver.FinishedAppending()
}
