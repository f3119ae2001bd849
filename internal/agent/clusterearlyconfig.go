package agent

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
