package cluster

import (
	"slices"
	"time"
)

// A hand-off to give, saved by an earlier process, is resumed only under
// a view the crawl agreed. The view an agent restarted on may never have
// been agreed (viewadopt.go, vieworphan.go): the hand-off its install
// began would give the new owners seen hashes and budget counts of keys
// the crawl gave someone else meanwhile. GivingAgreed waits until that
// view is known agreed — its zombie guard opened under it, a member
// answers the same view of its epoch (GET /v1/view?at=E: a leaver's view,
// without it, is confirmed so), or a newer view was installed over it
// without dropping its hand-offs — or until the hand-off is dropped with
// the view.

// GivingAgreed blocks until the view of epoch, whose hand-off this agent
// is to give (PendingGiving), is known agreed, and reports true; it
// reports false once that hand-off is dropped (the view was never
// agreed) or the node closed. The hand-off of a view other than the one
// this agent restarted on, unconfirmed, is agreed at once.
func (n *Node) GivingAgreed(epoch uint64) bool {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		r := n.vc.restored.Load()
		agreed := r == nil || r.Epoch != epoch || n.View() != r || n.memberHolds(r)
		// A drop happens before the view it was made for is replaced:
		// the hand-off still to give after agreed is kept.
		if !n.ho.giving(epoch) {
			return false
		}
		if agreed {
			return true
		}
		select {
		case <-n.ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// giving reports whether a hand-off to give at epoch is recorded.
func (h *handoffs) giving(epoch uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.ContainsFunc(h.st.Giving, func(m heldMove) bool { return m.Epoch == epoch })
}

// memberHolds reports whether an alive member whose settings agree
// installed v (the same view of its epoch).
func (n *Node) memberHolds(v *View) bool {
	own := viewDigest(v)
	for _, m := range n.aliveMembers() {
		if m.Name == n.cfg.Name || m.Meta.Exchange == "" || !n.isAgreed(m.Name) {
			continue
		}
		if d, ok := n.fetchViewAt(m.Meta.Exchange, v.Epoch); ok && d == own {
			return true
		}
	}
	return false
}
