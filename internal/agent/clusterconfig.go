package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/console"
)

// Live changes of cluster-wide settings in a crawl of several agents (the
// mechanism: the cluster package's config.go). Reconfigure (and PATCH
// /api/v1/config) of a setting in the table's cluster-wide column goes
// through the node's ChangeConfig: this agent checks the values
// (PrepareConfig: the same plan Reconfigure makes, nothing applied), and
// every agent applies them through its control loop (CommitConfig), under
// the next config epoch; a refusal changes nothing anywhere, the error
// naming the agent and its reason. The other settings of the request
// change on this agent only, after the cluster-wide ones. The changed values are saved in state/ as any live
// change is (live-settings.json) and, in a cluster, win over the command
// line at the next start (loadLive), so that the same commands resume the
// crawl with the values every agent holds.

// clusterWide splits changes into the cluster-wide settings and the
// others.
func clusterWide(cur Config, changes map[string]any) (wide, local map[string]any) {
	wide, local = map[string]any{}, map[string]any{}
	t := cur.Table()
	for name, v := range changes {
		if s := t.Lookup(name); s != nil && s.Cluster {
			wide[name] = v
		} else {
			local[name] = v
		}
	}
	return wide, local
}

// reconfigureCluster is Reconfigure of changes that name a cluster-wide
// setting: checked here first, then changed on every agent, then the rest
// changed here.
func (a *Agent) reconfigureCluster(ctx context.Context, n *cluster.Node, changes map[string]any) ([]Change, error) {
	a.curMu.Lock()
	cur := a.cur
	a.curMu.Unlock()
	_, diff, err := plan(cur, changes)
	if err != nil || len(diff) == 0 {
		return nil, err
	}
	wide, local := clusterWide(cur, changes)
	epoch, err := n.ChangeConfig(ctx, wide)
	if err != nil && epoch == 0 {
		return nil, fmt.Errorf("cluster-wide setting not changed: %w", err)
	}
	if err != nil {
		a.log.Warn("cluster-wide settings changed; some agents not told yet", "epoch", epoch, "err", err)
	}
	if len(local) > 0 {
		if _, err := a.reconfigureLocal(ctx, local); err != nil {
			return nil, fmt.Errorf("cluster-wide settings changed (config epoch %d), the others not: %w", epoch, err)
		}
	}
	return diff, nil
}

// PrepareConfig checks a cluster-wide change proposed by an agent of the
// crawl: every name must be a cluster-wide setting that can change live,
// every value valid here, and the crawl running here.
func (h *clusterHost) PrepareConfig(values map[string]any) error {
	a := h.a
	select {
	case <-a.runDone:
		return ErrNotRunning
	default:
	}
	values = maps.Clone(values)
	if entries, ok, err := takeBlocklist(values); err != nil {
		return err
	} else if _, _, err := a.block.cur.Load().with(entries); ok && err != nil {
		return err
	}
	a.curMu.Lock()
	cur := a.cur
	a.curMu.Unlock()
	t := cur.Table()
	for name := range values {
		if s := t.Lookup(name); s != nil && !s.Cluster {
			return fmt.Errorf("--%s is not a cluster-wide setting", name)
		}
	}
	_, _, err := plan(cur, values)
	return err
}

// CommitConfig applies a cluster-wide change the crawl wrote under epoch:
// through the control loop, or before it starts (commitBeforeRun).
func (h *clusterHost) CommitConfig(ctx context.Context, epoch uint64, values map[string]any) error {
	a := h.a
	values = maps.Clone(values)
	entries, blocks, err := takeBlocklist(values)
	if err != nil {
		return err
	}
	changes, ok, err := a.commitBeforeRun(values, entries, blocks)
	if !ok {
		changes, err = a.reconfigureLocal(ctx, values)
		if err == nil && blocks {
			// Saved and in force even when the scheduler is not running
			// (ErrState): queued URLs of a blocked host are then dropped
			// at their turn.
			if _, err = a.applyBlock(ctx, entries); errors.Is(err, console.ErrState) {
				err = nil
			}
		}
	}
	if err != nil {
		return err
	}
	if blocks {
		a.log.Info("cluster-wide blocklist changed", "epoch", epoch, "entries", len(entries))
	}
	for _, c := range changes {
		a.log.Info("cluster-wide setting changed", "epoch", epoch, "setting", c.Name, "old", c.Old, "new", c.New)
	}
	return nil
}

// commitBeforeRun applies a cluster-wide change (values, and with blocks
// the blocklist's entries) that arrives before Run's loops start: an
// agent started after the crawl changed its values reads them from etcd
// before it crawls. With no control loop and no scheduler running yet,
// the change is made here, all of it before the loops start (they wait
// on loopsMu): the frontier's settings (ReconfigureBeforeRun), the
// agent's, the blocklist (its queued URLs are dropped at their turn),
// saved as a live change is. ok is false once the loops run: the change
// then goes through the control loop.
func (a *Agent) commitBeforeRun(values map[string]any, entries []string, blocks bool) (diff []Change, ok bool, err error) {
	a.loopsMu.Lock()
	defer a.loopsMu.Unlock()
	if a.loopsUp {
		return nil, false, nil
	}
	a.curMu.Lock()
	cur := a.cur
	a.curMu.Unlock()
	next, diff, err := plan(cur, values)
	if err != nil {
		return nil, true, err
	}
	if cuts, change := a.frontierChange(&cur, &next); change {
		if err := a.frontier.ReconfigureBeforeRun(next.Frontier, cuts); err != nil {
			return nil, true, err
		}
	}
	a.live.Store(newLive(&next, a.seeds))
	a.adopt(next, diff)
	if blocks {
		if _, err := a.block.add(entries); err != nil {
			return nil, true, err
		}
	}
	return diff, true, nil
}
