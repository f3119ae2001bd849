package cluster

import (
	"errors"
	"fmt"
	"net/http"
)

// A batch of ready URLs is taken only under a view no older than the one
// its sender routed it under (Batch.Epoch). The agents install a view at
// different moments, and what the receiver does with a ready URL depends
// on the view: after a takeover it drops a second copy of a URL of the
// dead agent's keys, let through again by an interim owner's empty seen
// set, and which keys were taken over is known only from the takeover's
// view on. Applied under the older view, that copy is queued beside the
// first and both are fetched. So a receiver that has not installed the
// batch's epoch answers 503 without a Retry-After (counted:
// view_lag_refused_batches): the receiver's watch brings the view within
// milliseconds, and the sender tries again after 50 ms, backing off while
// the refusals last (sender.go). Views only grow and each is saved
// before it is in force, so a batch in the inbox is never newer than the
// view it is applied under, after a restart too.

// ReceiveBatch takes a batch's wire form from another agent (Receiver):
// nil once it is durable in the inbox, or was already received. A batch
// routed under a view older than this agent's fence is refused (fence.go)
// unless it was received before: what is in the inbox is applied, and its
// acknowledgement may have been lost.
func (n *Node) ReceiveBatch(wire []byte) error {
	b, err := DecodeBatch(wire)
	if err != nil {
		n.counts.refusedBatches.Add(1)
		n.log.Warn("cluster: malformed batch refused", "bytes", len(wire))
		return refused(http.StatusBadRequest, err.Error())
	}
	if n.dedup.has(b.ID) {
		n.counts.duplicateBatches.Add(1)
		return nil // already durable here: acknowledge again
	}
	if err := n.fenceBatch(b); err != nil {
		return err
	}
	if b.Kind == KindReady && b.Epoch > n.viewEpoch() {
		n.counts.viewLagRefused.Add(1)
		return &StatusError{Code: http.StatusServiceUnavailable,
			Body: fmt.Sprintf("routed under view epoch %d, which this agent has not installed yet", b.Epoch)}
	}
	if !n.receiving.Load() {
		return busy("agent not receiving")
	}
	// The applier takes the decoded batch once its frame is durable,
	// instead of reading and decoding it again.
	_, err = n.inbox.AppendNotify(wire, func(start, next int64) { n.decoded.put(b, start, next) })
	if err != nil {
		if errors.Is(err, ErrFull) {
			n.counts.inboxFull.Add(1)
		} else {
			n.log.Error("cluster: inbox", "err", err)
		}
		return busy(err.Error())
	}
	n.dedup.add(b.ID)
	n.counts.inboxBatches.Add(1)
	return nil
}
