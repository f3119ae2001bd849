package cluster

import "slices"

// GivingAgreed reports whether the hand-off this agent is to give at
// epoch (PendingGiving) is still recorded: every view is read back from
// etcd, so the view it was made for is the crawl's.
func (n *Node) GivingAgreed(epoch uint64) bool { return n.ho.giving(epoch) }

// giving reports whether a hand-off to give at epoch is recorded.
func (h *handoffs) giving(epoch uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.ContainsFunc(h.st.Giving, func(m heldMove) bool { return m.Epoch == epoch })
}
