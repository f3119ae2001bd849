package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Forgetting an agent that left the view and stopped in the middle of its
// leave (killed, or past its --leave-timeout) and is never started again:
// the new owners of the slots it gave up may await its release for ever
// (their appliers wait, and the crawl never ends). It is in no view, so
// no takeover comes for it; forget lists it absent in a view of the same
// agents, and a view listing an agent absent ends every wait for its
// release (expectReleases, and the host's holds of its addresses);
// Forget's next view takes it out of Absent again. What it had not handed
// over is given up, as for any agent forgotten.

// forgetLeft makes, for Forget, the view listing name absent when a
// member of v awaits a release from it, and returns it; an error when
// none does (name is not an agent of the crawl, or it left cleanly).
func (n *Node) forgetLeft(ctx context.Context, name string, v *View) (*View, error) {
	by := n.awaitedBy(ctx, name, v)
	if len(by) == 0 {
		return nil, fmt.Errorf("agent %s is not in the crawl's view (%s) and no member awaits a release from it", name, v)
	}
	tv, err := NextView(v, nil)
	if err != nil {
		return nil, err
	}
	withAbsent(tv, append(slices.Clone(v.Absent), name))
	n.log.Warn("cluster: forgetting an agent that left without finishing its hand-off", "agent", name, "awaited by", by)
	if err := n.ProposeView(ctx, tv, "petrel cluster forget "+name+": its releases no longer awaited"); err != nil {
		return nil, err
	}
	return tv, nil
}

// awaitedBy returns the members of v that await a release from name
// (this agent from its own state, the others from their status).
func (n *Node) awaitedBy(ctx context.Context, name string, v *View) []string {
	var by []string
	if _, ok := n.Awaiting()[name]; ok {
		by = append(by, n.cfg.Name)
	}
	for _, m := range n.aliveMembers() {
		if m.Name == n.cfg.Name || !v.Has(m.Name) || m.Meta.Exchange == "" {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		s, err := n.client.GetStatus(cctx, m.Meta.Exchange)
		cancel()
		if err == nil && slices.Contains(s.AwaitingFrom, name) {
			by = append(by, m.Name)
		}
	}
	return by
}
