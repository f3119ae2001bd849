package agent

import (
	"context"
	"fmt"

	"github.com/petrel-crawler/petrel/internal/console"
)

// The blocklist is a cluster-wide value besides the settings table's
// cluster-wide column: agents compare it when they meet (its size and a
// digest, blocklist.clusterSetting), and a change of it made on one agent
// of a crawl of several goes through the node's ChangeConfig like a
// cluster-wide setting (clusterconfig.go), under the name "blocklist"
// with the whole list of entries as its value: every agent checks it
// (PrepareConfig), then adds it (CommitConfig), or none does.

// blocklistValue is the name of the blocklist among a cluster-wide
// change's values.
const blocklistValue = "blocklist"

// blockCluster adds entries to the blocklist of every agent of the crawl
// through n, and returns the URLs this agent dropped.
func (a *Agent) blockCluster(ctx context.Context, entries []string) (console.BlockResult, error) {
	next, added, err := a.block.cur.Load().with(entries)
	if err != nil {
		return console.BlockResult{}, fmt.Errorf("%w: %v", console.ErrInvalid, err)
	}
	n := a.clusterNode.Load()
	if n == nil {
		return console.BlockResult{}, fmt.Errorf("%w: this agent has not joined its crawl yet: the blocklist changes on every agent or on none", console.ErrState)
	}
	before := a.stats.BlockedQueued.Load()
	epoch, err := n.ChangeConfig(ctx, map[string]any{blocklistValue: next.entries})
	if err != nil && epoch == 0 {
		return console.BlockResult{}, fmt.Errorf("%w: blocklist not changed: %v", console.ErrState, err)
	}
	if err != nil {
		a.log.Warn("blocklist changed; some agents not told yet", "epoch", epoch, "err", err)
	}
	return console.BlockResult{Added: added, Dropped: a.stats.BlockedQueued.Load() - before}, nil
}

// takeBlocklist removes the blocklist from a cluster-wide change's values
// and returns its entries (ok false when the change has none).
func takeBlocklist(values map[string]any) (entries []string, ok bool, err error) {
	v, ok := values[blocklistValue]
	if !ok {
		return nil, false, nil
	}
	delete(values, blocklistValue)
	switch l := v.(type) {
	case []string:
		return l, true, nil
	case []any:
		for _, e := range l {
			s, isString := e.(string)
			if !isString {
				return nil, true, fmt.Errorf("blocklist: entry %v is not a string", e)
			}
			entries = append(entries, s)
		}
		return entries, true, nil
	}
	return nil, true, fmt.Errorf("blocklist: want a list of entries, not %T", v)
}
