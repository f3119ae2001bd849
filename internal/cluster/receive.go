package cluster

import (
	"errors"
	"net/http"
)

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
