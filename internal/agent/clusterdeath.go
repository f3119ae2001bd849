package agent

import (
	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/frontier"
)

// Owner says who owns a record now, for the re-routing of batches held for
// an agent that left the view (cluster.Host): a URL goes to the owner
// of its key's group, a URL out of a sieve to the owner of its host's
// address; "" is this agent.
func (h *clusterHost) Owner(kind cluster.Kind, rec []byte) string {
	r := h.a.router
	switch kind {
	case cluster.KindReady:
		return string(r.ReadyOwner(rec))
	case cluster.KindRevisit:
		e, err := splitRevisitEntry(rec)
		if err != nil {
			return "" // kept here: the apply refuses it
		}
		return string(r.ReadyOwner(e.Rec))
	}
	return string(r.OwnerOf(rec[frontier.MetaLen:]))
}

// noteDeclaredDead logs a change that is the crawl declaring this agent
// dead (c.Dead: it was in the old view, and the new lists it absent). Such
// an agent hands nothing over (cluster.ViewChange.Give is empty). The others took its keys and addresses over
// without a release and with an empty seen set; a hand-off now would reach
// them late, as a second source of the same keys' URLs (its queued URLs as
// ready URLs, fetched again where the interim owners had found them
// already), and its sieve's deletion of the slots handed over could run
// after the interim owners handed them back at its return, emptying its
// seen set of its own keys. It keeps its queues and its sieve as they are
// (its zombie guard is closed: it fetches nothing) until a later view gives
// its keys back, and the interim owners then hand it what they found
// meanwhile.
func (h *clusterHost) noteDeclaredDead(c cluster.ViewChange) {
	if !c.Dead {
		return
	}
	h.a.log.Warn("cluster: this agent was declared dead (the new view lists it absent): it hands nothing over, keeps what it holds, and fetches nothing until a view gives it keys again",
		"view", c.New.String())
}
