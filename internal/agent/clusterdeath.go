package agent

import (
	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/frontier"
)

// Owner says who owns a record now, for the re-routing of batches held for
// an agent that left the view (cluster.Rerouter): a URL goes to the owner
// of its key's group, a URL out of a sieve to the owner of its host's
// address; "" is this agent.
func (h *clusterHost) Owner(kind cluster.Kind, rec []byte) string {
	r := h.a.router
	if kind == cluster.KindReady {
		return string(r.ReadyOwner(rec))
	}
	return string(r.OwnerOf(rec[frontier.MetaLen:]))
}
