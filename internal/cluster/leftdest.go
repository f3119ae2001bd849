package cluster

import (
	"slices"
	"sync"
	"time"
)

// Batches for an agent that left the view deliberately (a leave, not a
// death: it is not listed absent). The outbox may hold batches for it
// that were sent and not acknowledged — in flight when the view without
// it came, or sent before its acknowledgement was lost to a crash of it
// in the middle of its leave. Such a batch may be in its inbox already:
// applied there, its URLs were handed over or forwarded, and a second copy
// routed to their new owners would be applied twice (a ready URL,
// which no sieve stands after, fetched twice). So those batches are not
// re-routed while the agent that left is alive, nor for the grace period
// G after it was last seen alive: the sender delivers them to it instead,
// and it acknowledges the ones it holds (by their id) and forwards the
// others like any URL for keys it no longer owns. A resumed leave (a
// restart after a kill in the middle) makes it alive again for that.
// Past G without it, they are re-routed: a possible duplicate rather than
// a loss. Batches never sent to it are re-routed at once.

// leftSeen records when each agent that left the view was last alive.
type leftSeen struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// leftKeeps reports whether the batches sent to dest (not in v, not
// absent from it) wait instead of being re-routed.
func (n *Node) leftKeeps(dest string, v *View) bool {
	if v.Has(dest) || slices.Contains(v.Absent, dest) {
		return false
	}
	n.left.mu.Lock()
	defer n.left.mu.Unlock()
	if n.left.last == nil {
		n.left.last = map[string]time.Time{}
	}
	if n.exchangeOf(dest) != "" {
		n.left.last[dest] = time.Now()
		return true
	}
	t, ok := n.left.last[dest]
	if !ok {
		t = n.started
	}
	return time.Since(t) < n.cfg.Grace
}

// leftResend keeps, of the batches the sender would send to dest, an
// agent that left v and is alive, only those sent before (perhaps in its
// inbox); nil for any other destination outside v.
func (n *Node) leftResend(dest string, v *View, batch []OutEntry) []OutEntry {
	if v == nil || v.Has(dest) || slices.Contains(v.Absent, dest) {
		return nil
	}
	return slices.DeleteFunc(batch, func(e OutEntry) bool { return !n.tried.has(dest, e.ID) })
}
