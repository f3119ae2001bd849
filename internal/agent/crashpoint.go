package agent

import "github.com/petrel-crawler/petrel/internal/sieve"

// Fault injection for the crash tests, built only with the petrelcrash tag
// (crashpoint_on.go; the e2e tests build petrel with it): PETREL_CRASH_AT=point:N
// makes the process kill itself with SIGKILL the N-th time it reaches
// point, so that a test can crash it exactly inside a checkpoint or a
// sieve flush. Without the tag (crashpoint_off.go) newCrashPoint is nil
// and reach does nothing.
//
// Points: "checkpoint" (a checkpoint folder half written, before its
// rename), "sieve-flush" (a sieve flow half delivered) and
// "handoff-release" (a hand-off's release acknowledged by one new owner,
// the others' not sent yet), "leave-checkpoint" (a leave's requests in
// flight ended, its checkpoint not begun) and "leave-moved" (a leave's
// queued URLs moved out into the outbox, its releases not sent).

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
