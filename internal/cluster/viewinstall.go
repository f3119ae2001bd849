package cluster

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	"github.com/petrel-crawler/petrel/internal/notify"
)

// Views come from etcd (coordination.go), written by the crawl's one
// writer of views; every agent installs each view it reads, in revision
// order, including views without it (a joining agent holds the view it
// joins, so that the hand-off of what moves to it is computed from that
// view). Installing a view calls the host's ViewChanged with the change
// (ViewChange: the moves, what to hold, what to give), before the new
// view is in force: the new owner holds what moves to it before anything
// can reach it under the new view.

// viewChange serialises installs and tells waiters of a new view.
type viewChange struct {
	mu        sync.Mutex
	installed notify.Signal // at every install
	// offered is closed when installView is first given a view in this
	// process (one read from etcd), newer than the one held or not.
	offered     chan struct{}
	offeredOnce sync.Once
}

// installView makes v this agent's view if it is newer than the one held.
func (n *Node) installView(v *View) error {
	if v == nil {
		return nil
	}
	n.vc.mu.Lock()
	defer n.vc.mu.Unlock()
	defer n.vc.offeredOnce.Do(func() { close(n.vc.offered) })
	old := n.View()
	if old != nil && old.Epoch >= v.Epoch {
		return nil
	}
	n.log.Info("cluster: view", "view", v.String())
	return n.putView(old, v)
}

// putView makes v this agent's view in place of old (nil: none), with
// vc.mu held: the releases it makes this agent await saved, the view
// saved, the host's ViewChanged run, then the view in force.
func (n *Node) putView(old, v *View) error {
	var c ViewChange
	if old != nil {
		var err error
		if c, err = n.expectReleases(old, v); err != nil {
			return fmt.Errorf("cluster: save awaited releases: %w", err)
		}
		n.noteLosses(v, c.Moves) // fence.go
	}
	if err := saveView(filepath.Join(n.cfg.Dir, viewFile), v); err != nil {
		return fmt.Errorf("cluster: save view: %w", err)
	}
	if DeclaredDead(n.cfg.Name, old, v) {
		// Closed before v is in force and before the host acts on it: no
		// request of this agent starts under a view that gave its keys away.
		n.guard.Close(fmt.Sprintf("declared dead: the crawl's view %s lists this agent absent", v))
	}
	if dead := newlyAbsent(old, v); len(dead) > 0 && v.Has(n.cfg.Name) {
		n.log.Warn("cluster: taking over the keys of dead agents", "dead", dead, "view", v.String())
	}
	if old != nil {
		n.host.ViewChanged(c)
	}
	n.view.Store(v)
	n.vc.installed.Notify()
	return nil
}

// newlyAbsent lists the agents v lists absent and old did not.
func newlyAbsent(old, v *View) []string {
	var out []string
	for _, a := range v.Absent {
		if old == nil || !slices.Contains(old.Absent, a) {
			out = append(out, a)
		}
	}
	return out
}
