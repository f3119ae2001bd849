package cluster

import (
	"fmt"
	"slices"
)

// Views of one epoch that differ. The two-phase agreement (viewchange.go)
// leaves at most one view of an epoch committed while every promise is in
// force, and a proposer installs its view only once a target has
// installed it. A promise lapses, though: a target that installed a view
// and died before anyone learnt it from it holds a view that the others,
// meanwhile, may have replaced by another of the same epoch — which then
// lists it absent or leaves it out, for it was not there to promise. Its
// view was never agreed.
//
// The zombie guard therefore confirms a view, not an epoch: a member
// answering a different view of the same epoch keeps the guard closed.
// When every member of that epoch that answered holds one other view, and
// none holds this agent's, this agent adopts it (adoptView): the
// hand-off state recorded for its own view of the epoch (releases
// awaited, moves held, hand-offs to give) is dropped, for nobody else
// acted on that view, and the agreed view is installed in its place as a
// declared-dead agent installs a takeover (it keeps what it holds for its
// return). A commit of the next view whose base (the proposer's view) is
// another view of this agent's epoch is installed the same way, from that
// base (installView). The host's holds of the addresses the dropped view
// moved to this agent end with it (HoldDropHost).

// sameView reports whether a and b are the same view: epoch, owners with
// their weights, and absent agents.
func sameView(a, b *View) bool {
	return a.Epoch == b.Epoch && slices.Equal(a.Agents, b.Agents) && slices.Equal(a.Absent, b.Absent)
}

// otherViews gathers the views of v's epoch, other than v, that members
// answered with.
type otherViews struct {
	views []*View
	count []int
}

func (o *otherViews) add(pv *View) {
	for i, w := range o.views {
		if sameView(w, pv) {
			o.count[i]++
			return
		}
	}
	o.views, o.count = append(o.views, pv), append(o.count, 1)
}

// settle acts on the other views of v's epoch that members answered with,
// same being the agents holding v (this one counted): it adopts the one
// other view when no member holds v, and otherwise only logs the
// conflict. The guard stays closed either way.
func (n *Node) settle(v *View, o *otherViews, same int) {
	if len(o.views) == 0 {
		return
	}
	if same > 1 || len(o.views) > 1 {
		msg := fmt.Sprintf("%s held by %d agents against %d other views", v, same, len(o.views))
		if prev := n.vc.conflict.Swap(&msg); prev == nil || *prev != msg {
			n.log.Warn("cluster: members hold different views of one epoch; the zombie guard stays closed", "views", msg)
		}
		return
	}
	agreed := o.views[0]
	n.log.Warn("cluster: this agent's view was never agreed (the crawl's members hold another of its epoch); adopting theirs",
		"own", v.String(), "agreed", agreed.String(), "members", o.count[0])
	if err := n.adoptView(v, agreed); err != nil {
		n.log.Error("cluster: adopt the crawl's view", "err", err)
	}
}

// adoptView installs agreed, a view of own's epoch, in place of own, this
// agent's view in force (nothing if the view changed meanwhile).
func (n *Node) adoptView(own, agreed *View) error {
	n.vc.mu.Lock()
	defer n.vc.mu.Unlock()
	if n.View() != own {
		return nil
	}
	if err := n.dropEpoch(own.Epoch); err != nil {
		return fmt.Errorf("cluster: drop the hand-offs of a view never agreed: %w", err)
	}
	return n.putView(own, agreed)
}

// dropEpoch forgets the releases awaited, the moves held and the
// hand-offs to give that the install of a view of epoch recorded, and
// ends the host's holds of the addresses moved to this agent at epoch.
func (n *Node) dropEpoch(epoch uint64) error {
	if err := n.ho.dropEpoch(n.cfg.Dir, epoch); err != nil {
		return err
	}
	if hd, ok := n.host.(HoldDropHost); ok {
		hd.DropHolds(epoch) // vieworphan.go
	}
	return nil
}

func (h *handoffs) dropEpoch(dir string, epoch uint64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for from, e := range h.st.Awaiting {
		if e == epoch {
			delete(h.st.Awaiting, from)
		}
	}
	ofEpoch := func(m heldMove) bool { return m.Epoch == epoch }
	h.st.Holds = slices.DeleteFunc(h.st.Holds, ofEpoch)
	h.st.Giving = slices.DeleteFunc(h.st.Giving, ofEpoch)
	delete(h.st.GivingUntil, epoch)
	delete(h.st.Views, epoch)
	h.keepViews()
	h.n.Store(int32(len(h.st.Awaiting)))
	close(h.changed)
	h.changed = make(chan struct{})
	return h.saveLocked(dir)
}
