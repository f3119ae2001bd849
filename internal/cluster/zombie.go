package cluster

import (
	"context"
	"fmt"
	"time"
)

// An agent's zombie guard (Guard) in the Node. It starts closed: every
// start, a first one as a restart on a crawl directory, confirms the
// crawl's view with its members before fetching, so that an agent killed
// and started again, or stopped and resumed, while the others took its
// keys over fetches nothing under its old view. It closes when no gossip
// round completed for G/2 and when a view without this agent is in force
// (the crawl declared it dead). It opens again when all of these hold:
//
//   - this agent holds a view that includes it, and its members are all
//     here (the node is ready);
//   - a gossip round completed since the guard closed;
//   - every alive member of the view answered, over the exchange, with a
//     view of no higher epoch, and a strict majority of the view's agents
//     (this one counted) hold the same epoch.
//
// A member answering a higher epoch keeps it closed: the newer view is
// installed first (caught up), and if it is without this agent the agent
// waits to be given keys again in a later one (a rejoin).

// Guard returns the node's zombie guard: a fetcher asks its Allowed
// before each request and cuts the request when Closing is closed.
func (n *Node) Guard() *Guard { return n.guard }

func (n *Node) newGuard() *Guard {
	active := func() bool {
		v := n.View()
		return v != nil && len(v.Agents) > 1
	}
	g := newGuard(n.cfg.Grace/2, time.Now, active, func(reason string) {
		n.log.Warn("cluster: zombie guard closed: no request starts until this agent is confirmed a member of the crawl's view", "reason", reason)
	})
	g.Close("starting: the crawl's view is not confirmed yet")
	return g
}

// zombieLoop watches for a view without this agent and opens the guard
// once the view is confirmed.
func (n *Node) zombieLoop(ctx context.Context) {
	t := time.NewTicker(max(n.cfg.Timing.probe()/2, 20*time.Millisecond))
	defer t.Stop()
	member := false // this agent was in a view it held
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		v := n.View()
		if v == nil {
			continue
		}
		if !v.Has(n.cfg.Name) {
			// An agent that left deliberately (Leaving) lets its requests
			// in flight end: its old addresses wait for its release.
			if member && !n.leaving.Load() {
				n.guard.Close(fmt.Sprintf("declared dead: the crawl's view (%s) is without this agent", v))
			}
			continue
		}
		member = true
		if n.guard.isClosed() && n.isReady() && n.viewConfirmed(ctx, v) {
			n.guard.open()
			n.log.Info("cluster: zombie guard open: view confirmed by the crawl's members", "view", v.String())
		}
	}
}

// viewConfirmed reports whether the crawl's alive members confirm v (see
// the conditions above).
func (n *Node) viewConfirmed(ctx context.Context, v *View) bool {
	if len(v.Agents) == 1 {
		return true
	}
	if !n.guard.roundSinceClose() {
		return false
	}
	same := 1 // this agent
	for _, m := range n.aliveMembers() {
		if m.Name == n.cfg.Name || !v.Has(m.Name) || m.Meta.Exchange == "" {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		pv, err := n.fetchView(cctx, m.Meta.Exchange)
		cancel()
		if err != nil {
			return false
		}
		if pv.Epoch > v.Epoch {
			return false
		}
		if pv.Epoch == v.Epoch {
			same++
		}
	}
	return 2*same > len(v.Agents)
}
