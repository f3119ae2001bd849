package cluster

import (
	"context"
	"time"
)

// A batch of ready URLs is applied under a view no older than the one its
// sender routed it under (Batch.Epoch). The agents install a view at
// different moments, and what the receiver does with a ready URL depends
// on the view: after a takeover it drops a second copy of a URL of the
// dead agent's keys, let through again by an interim owner's empty seen
// set, and which keys were taken over is known only from the takeover's
// view on. Applied under the older view, that copy is queued beside the
// first and both are fetched.
//
// So the applier holds such a batch until this agent has installed the
// batch's epoch (awaitBatchView), outside the applier's lock (a checkpoint
// is not kept waiting). Every view is in etcd, and this agent reads each
// one: the wait ends when its watch delivers it. A view this agent cannot
// read (cut off from the coordinators) is waited for at most viewLagHold;
// the batch is then applied without it, logged and counted
// (view_lag_applied_batches); each batch held is counted too
// (view_lag_held_batches).

// viewLagHold bounds how long a batch of ready URLs waits for its view.
const viewLagHold = time.Minute

// awaitBatchView holds b, a batch of ready URLs, until this agent holds a
// view of b's epoch or newer; at most viewLagHold, or until the node
// stops.
func (n *Node) awaitBatchView(ctx context.Context, b *Batch) {
	if b.Kind != KindReady || n.viewEpoch() >= b.Epoch {
		return
	}
	n.counts.viewLagHeld.Add(1)
	start := time.Now()
	limit := time.NewTimer(viewLagHold)
	defer limit.Stop()
	for n.viewEpoch() < b.Epoch {
		installed := n.vc.installed.Wait()
		if n.viewEpoch() >= b.Epoch {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-installed:
		case <-limit.C:
			n.counts.viewLagApplied.Add(1)
			n.log.Warn("cluster: a batch of ready URLs applied without the view it waited for",
				"batch", b.ID.String(), "epoch", b.Epoch, "view", n.viewEpoch(), "held", time.Since(start).Round(time.Millisecond).String())
			return
		}
	}
	if d := time.Since(start); d >= time.Second {
		n.log.Info("cluster: a batch of ready URLs waited for the view it was routed under", "batch", b.ID.String(), "epoch", b.Epoch, "held", d.Round(time.Millisecond).String())
	}
}
