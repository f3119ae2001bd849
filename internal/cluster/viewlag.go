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
// is not kept waiting). It holds any batch of ready URLs, too, while this
// agent has promised a newer view than it holds (promisedEpoch): a
// takeover being agreed. A dead agent restarted meanwhile routes under its
// old view what its sieve, restored from its checkpoint, lets through
// again; applied before this agent's host learns of the takeover, such a
// second copy of a URL is not dropped either. It does not wait for gossip to bring the view: it
// asks the batch's sender for its view (it installed that epoch before it
// routed the batch) or, the sender not answering, a member announcing that
// epoch, every viewAskEvery — while this agent is a member of the view it
// holds: one joining, or coming back after its death, learns its view
// from the commit that adds it (with the view it joins from) or by
// gossip. A view that no alive member has — its only holder died before
// its commit reached anyone — never comes: the batch is applied without it
// after viewLagHold, logged and counted (view_lag_applied_batches); each
// batch held is counted too (view_lag_held_batches).

// viewLagHold bounds how long a batch of ready URLs waits for its view:
// as long as a promise of a newer view counts for a zombie guard
// (promiseHold), past which a view is no longer expected from it.
const viewLagHold = promiseHold

// viewAskEvery is how often a held batch's view is asked for.
const viewAskEvery = 200 * time.Millisecond

// awaitBatchView holds b, a batch of ready URLs, until this agent holds a
// view of b's epoch or newer, asking for that view meanwhile, and has
// promised no newer one; at most viewLagHold, or until the node stops.
func (n *Node) awaitBatchView(ctx context.Context, b *Batch) {
	behind := func() bool { return n.viewEpoch() < b.Epoch || n.promisedEpoch() > 0 }
	if b.Kind != KindReady || !behind() {
		return
	}
	n.counts.viewLagHeld.Add(1)
	start := time.Now()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	var asked time.Time
	for behind() {
		if time.Since(start) >= viewLagHold {
			n.counts.viewLagApplied.Add(1)
			n.log.Warn("cluster: a batch of ready URLs applied without the view it waited for (routed under it, or promised here)",
				"batch", b.ID.String(), "epoch", b.Epoch, "view", n.viewEpoch(), "held", time.Since(start).Round(time.Millisecond).String())
			return
		}
		if v := n.View(); v != nil && v.Epoch < b.Epoch && time.Since(asked) >= viewAskEvery && v.Has(n.cfg.Name) {
			asked = time.Now()
			n.askView(ctx, b.ID.Sender, b.Epoch)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	if d := time.Since(start); d >= time.Second {
		n.log.Info("cluster: a batch of ready URLs waited for the view it was routed under", "batch", b.ID.String(), "epoch", b.Epoch, "held", d.Round(time.Millisecond).String())
	}
}

// askView installs a view of at least epoch from the agent named from, or
// else from an alive member announcing one.
func (n *Node) askView(ctx context.Context, from string, epoch uint64) {
	var addrs []string
	for _, m := range n.aliveMembers() {
		switch {
		case !n.isAgreed(m.Name) || m.Meta.Exchange == "":
		case m.Name == from:
			addrs = append([]string{m.Meta.Exchange}, addrs...)
		case m.Meta.ViewEpoch >= epoch:
			addrs = append(addrs, m.Meta.Exchange)
		}
	}
	for _, addr := range addrs {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		v, err := n.fetchView(cctx, addr)
		cancel()
		if err != nil || v.Epoch < epoch || v.Epoch <= n.viewEpoch() {
			continue
		}
		n.log.Info("cluster: view learnt from a member for a batch routed under it", "view", v.String(), "from", addr)
		if err := n.installView(v, nil); err != nil {
			n.log.Error("cluster: install view", "err", err)
		}
		return
	}
}
