package agent

import (
	"context"
	"fmt"

	"github.com/petrel-crawler/petrel/internal/console"
)

// Values every agent of a crawl of several must agree on are compared when
// agents meet (clusterSettings: the settings table's cluster-wide column,
// the seeds, the blocklist). A change of one made on a running agent must
// reach every agent of the crawl, all or nothing, before it is in force
// anywhere; until it can, a clustered agent refuses it rather than
// diverge from the others silently.

// propagateClusterWide carries a change of the cluster-wide value name
// (value as Reconfigure or Block takes it) made on this agent to the other
// agents of the crawl, or refuses it. A crawl of one agent has no one to
// tell. This is the hook of the live propagation of cluster-wide values:
// today nothing carries them, so a clustered agent refuses the change
// with console.ErrState (a 409 from the console).
func (a *Agent) propagateClusterWide(ctx context.Context, name string, value any) error {
	if !a.cfg.Cluster.Enabled() {
		return nil
	}
	return fmt.Errorf("%w: %s is a cluster-wide setting and this agent is one of a crawl of several: a live change of it is not carried to the other agents yet, so it is refused here rather than made on this agent alone", console.ErrState, name)
}
