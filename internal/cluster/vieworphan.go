package cluster

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// A view never agreed, replaced by a newer one. An agent restarted on a
// view of some epoch that was never agreed (viewadopt.go), after the
// crawl's members moved past that epoch, installs their newer view over
// its own. Before it does, it asks them which view of its epoch they held
// (viewhistory.go): when one held another view of that epoch and none
// held its own, its own was never agreed, and what its install recorded
// is dropped as adoptView drops it (dropEpoch: releases awaited, moves
// held, hand-offs to give, and its host's holds of the addresses moved to
// it). The newer view is then installed from the base its commit names,
// if any. Only the view an agent restarted on, before its guard ever
// opened under it, is asked about: once the crawl's members confirmed it,
// it was agreed.
//
// When no member remembers that epoch (all joined later, or installed
// more than maxHistory views since), or a member answers the same view
// (another agent that installed it and was restarted on it too), nothing
// is dropped: the view is treated as agreed.

// HoldDropHost is implemented by a HoldHost that can end its holds of the
// addresses moved to it at an epoch whose view was never agreed: no
// release of that epoch will come.
type HoldDropHost interface {
	DropHolds(epoch uint64)
}

// neverAgreed returns old, this agent's view, when v (newer) replaces it
// and the crawl's members show it was never agreed; nil otherwise.
func (n *Node) neverAgreed(old, v *View) *View {
	if old == nil || v.Epoch <= old.Epoch || n.vc.restored.Load() != old {
		return nil
	}
	own := viewDigest(old)
	other := ""
	for _, m := range n.aliveMembers() {
		if m.Name == n.cfg.Name || m.Meta.Exchange == "" || !n.isAgreed(m.Name) {
			continue
		}
		d, ok := n.fetchViewAt(m.Meta.Exchange, old.Epoch)
		switch {
		case !ok:
		case d == own:
			return nil
		default:
			other = m.Name
		}
	}
	if other == "" {
		return nil
	}
	n.log.Warn("cluster: this agent's view was never agreed (a member held another of its epoch); its hand-offs are dropped",
		"own", old.String(), "newer", v.String(), "member", other)
	return old
}

// fetchViewAt asks the agent at addr for the digest of its view of epoch.
func (n *Node) fetchViewAt(addr string, epoch uint64) (uint64, bool) {
	ctx, cancel := context.WithTimeout(n.ctx, 2*time.Second)
	defer cancel()
	b, err := n.client.do(ctx, http.MethodGet, addr, "/v1/view?at="+strconv.FormatUint(epoch, 10), nil)
	if err != nil {
		return 0, false
	}
	var r viewAt
	if json.Unmarshal(b, &r) != nil || r.Epoch != epoch || r.Digest == 0 {
		return 0, false
	}
	return r.Digest, true
}
