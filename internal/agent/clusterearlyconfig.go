package agent

import (
	"maps"
)

// commitBeforeRun applies a cluster-wide change that arrives before Run's
// loops start: an agent started after the crawl changed its values reads
// them from etcd before it crawls. With no
// control loop and no scheduler running yet, the change is made here, all
// of it before the loops start (they wait on loopsMu): the frontier's
// settings (ReconfigureBeforeRun), the agent's, the blocklist (its queued
// URLs are dropped at their turn), each change logged old → new and saved
// as a live change is. ok is false once the loops run: the change then
// goes through the control loop.
func (a *Agent) commitBeforeRun(epoch uint64, values map[string]any) (ok bool, err error) {
	a.loopsMu.Lock()
	defer a.loopsMu.Unlock()
	if a.loopsUp {
		return false, nil
	}
	values = maps.Clone(values)
	entries, blocks, err := takeBlocklist(values)
	if err != nil {
		return true, err
	}
	a.curMu.Lock()
	cur := a.cur
	a.curMu.Unlock()
	next, diff, err := plan(cur, values)
	if err != nil {
		return true, err
	}
	if cuts, change := a.frontierChange(&cur, &next); change {
		if err := a.frontier.ReconfigureBeforeRun(next.Frontier, cuts); err != nil {
			return true, err
		}
	}
	a.live.Store(newLive(&next, a.seeds))
	a.adopt(next, diff)
	if blocks {
		added, err := a.block.add(entries)
		if err != nil {
			return true, err
		}
		a.log.Info("cluster-wide blocklist changed", "epoch", epoch, "added", added)
	}
	for _, c := range diff {
		a.log.Info("cluster-wide setting changed", "epoch", epoch, "setting", c.Name, "old", c.Old, "new", c.New)
	}
	return true, nil
}
