package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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
//     view of no higher epoch and none with another view of the same
//     epoch (viewadopt.go), and a strict majority of the view's agents
//     (this one counted) hold the same view.
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
			n.vc.restored.Store(nil) // confirmed: agreed (vieworphan.go)
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
	same := 1             // this agent
	var others otherViews // viewadopt.go
	for _, m := range n.aliveMembers() {
		if m.Name == n.cfg.Name || !v.Has(m.Name) || m.Meta.Exchange == "" {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		pv, promised, err := n.fetchViewPromised(cctx, m.Meta.Exchange)
		cancel()
		if err != nil || promised > v.Epoch {
			// A member that promised a newer view is agreeing on one (a
			// takeover of this agent's keys, perhaps): not confirmed.
			return false
		}
		if pv.Epoch > v.Epoch {
			// A newer view: installed now rather than at the next gossip
			// of its epoch (it may declare this agent dead: declared.go).
			n.log.Info("cluster: view learnt from a member confirming this agent's view", "view", pv.String(), "from", m.Name)
			if err := n.installView(pv, nil); err != nil {
				n.log.Error("cluster: install view", "err", err)
			}
			return false
		}
		if pv.Epoch == v.Epoch && sameView(pv, v) {
			same++
		} else if pv.Epoch == v.Epoch {
			others.add(pv)
		}
	}
	n.settle(v, &others, same)
	return len(others.views) == 0 && 2*same > len(v.Agents)
}

// viewReply is the answer to GET /v1/view?promised=1: the view in force
// and the epoch of a newer view the responder promised and has not
// installed yet (0: none).
type viewReply struct {
	View     *View  `json:"view"`
	Promised uint64 `json:"promised,omitempty"`
}

// promisedEpoch is the epoch of the view this agent promised and holds no
// view of yet (0: none): until it installs a view of that epoch or the
// proposal is aborted, at most promiseHold after the promise — longer
// than the promise keeps other proposals of the epoch out (promiseTTL),
// for its proposer may have installed it after that.
func (n *Node) promisedEpoch() uint64 {
	n.vc.promiseMu.Lock()
	defer n.vc.promiseMu.Unlock()
	p := n.vc.promised
	if p == nil || time.Since(n.vc.promisedT) >= promiseHold || p.Epoch <= n.viewEpoch() {
		return 0
	}
	return p.Epoch
}

// fetchViewPromised asks the agent at addr for its view and the newer
// one it promised.
func (n *Node) fetchViewPromised(ctx context.Context, addr string) (*View, uint64, error) {
	b, err := n.client.do(ctx, http.MethodGet, addr, "/v1/view?promised=1", nil)
	if err != nil {
		return nil, 0, err
	}
	var r viewReply
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, 0, err
	}
	if r.View == nil {
		return nil, 0, errors.New("cluster: view reply without a view")
	}
	return r.View, r.Promised, nil
}
