package agent

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/sieve"
)

// Ready URLs let through a second time. When an agent is declared dead,
// the interim owners of its keys start them with an empty seen set: a URL
// of those keys that its sieve had let through before its death, and that
// an interim owner finds again, is let through a second time and goes to
// the owner of its host's address. Where that address is not the dead
// agent's, its owner got the first copy (queued still, or fetched), and
// would fetch the URL twice. The same happens after the dead agent's
// return when it was killed: its sieve, restored from its checkpoint, lets
// through again what it had let through since. So an agent keeps the
// hashes of the ready URLs it is given (a bounded cache that may forget,
// never invent), whether another agent's sieve sends them or its own
// (HeldAlready), and drops one of a key once taken over from an absent
// agent whose hash the cache holds (counted as InterimAgainDropped). A
// kill -9 and a restart within G make no takeover, and the restarted
// sieve lets through again all the same: so once ready batches of two
// processes of one sender have come (restartedSender), all its ready
// URLs are checked too, whatever their keys. Only
// those are checked, and never a hand-over record; and a record this
// agent forwards to another is forgotten (forwarded), so that one coming
// back on purpose (a hand-off, a host moving back to an address) is taken.

// interimCacheBytes is the RAM of the cache of ready URLs received.
const interimCacheBytes = 8 << 20

// interimAgain is the clusterHost's part of it.
type interimAgain struct {
	taken atomic.Pointer[cluster.SlotSet] // the slots taken over from absent agents (nil: none)
	seen  *sieve.URLCache                 // ready URLs received
	mu    sync.Mutex
	procs map[string]senderProcs // per sender of ready batches received
}

// senderProcs is what an agent knows of another's processes: the
// incarnation of the first ready batch it received from it, and whether
// one of another came since.
type senderProcs struct {
	first     uint64
	restarted bool
}

// restartedSender reports whether ready batches of two processes of id's
// sender (started again on its directory) have reached this agent, id's
// one of them: from then on all of that sender's are checked, so that a
// batch its earlier process left in its outbox, delivered after the
// restarted sieve's, is checked too. A process's logged batches
// (loggedready.go) count as its own.
func (h *clusterHost) restartedSender(id cluster.BatchID) bool {
	inc := id.Incarnation &^ (1 << 63)
	h.interim.mu.Lock()
	defer h.interim.mu.Unlock()
	p, ok := h.interim.procs[id.Sender]
	switch {
	case !ok:
		if h.interim.procs == nil {
			h.interim.procs = map[string]senderProcs{}
		}
		h.interim.procs[id.Sender] = senderProcs{first: inc}
	case inc != p.first && !p.restarted:
		p.restarted = true
		h.interim.procs[id.Sender] = p
	}
	return p.restarted
}

// newClusterHost returns the host of a's cluster node.
func newClusterHost(a *Agent) *clusterHost {
	return &clusterHost{a: a, interim: interimAgain{seen: sieve.NewURLCache(interimCacheBytes)}}
}

// noteTakeover follows a view change: the slots nw gives to others from
// agents it lists absent and old had as members are added to those
// checked. They stay checked after the dead agent's return, when its sieve,
// restored from its checkpoint after a kill -9, lets through again what it
// had let through since; but not on the agent that returns, whose own
// copies the tokens of its return account for (clusterreturn.go).
func (h *clusterHost) noteTakeover(c cluster.ViewChange) {
	if c.Return {
		h.interim.taken.Store(nil)
		return
	}
	nw := c.New
	if !slices.ContainsFunc(nw.Absent, c.Old.Has) {
		return // no agent newly absent
	}
	set := cluster.NewSlotSet()
	if prev := h.interim.taken.Load(); prev != nil {
		copy(set, *prev)
	}
	for from, to := range c.Moves {
		if !slices.Contains(nw.Absent, from) {
			continue
		}
		for _, s := range to {
			for i, w := range s {
				set[i] |= w
			}
		}
	}
	h.interim.taken.Store(&set)
}

// forwarded forgets a ready record this agent sends to another (a hand-off
// of its queued URLs, a host moving address, or its sieve's new URL for an
// address of another's): should it come back, it is not held here.
func (h *clusterHost) forwarded(rec []byte) {
	if _, inner, _, err := frontier.SplitHandover(rec); err == nil && len(inner) >= frontier.MetaLen {
		url := inner[frontier.MetaLen:]
		h.interim.seen.Forget(sieve.KeyHash(h.a.cfg.Frontier.Assign.GroupHash(url), url))
	}
}

// readyAgain reports whether the ready record rec, received, is a second
// copy that an interim owner sent, or a restarted sender (restarted: see
// above); it remembers rec otherwise.
func (h *clusterHost) readyAgain(rec []byte, restarted bool) bool {
	if len(rec) < frontier.MetaLen || rec[0] == frontier.HandoverTag {
		return false // a host's move between addresses: sent on purpose
	}
	url := rec[frontier.MetaLen:]
	hh := sieve.KeyHash(h.a.cfg.Frontier.Assign.GroupHash(url), url)
	seen := h.interim.seen
	if taken := h.interim.taken.Load(); restarted || taken != nil && taken.Has(sieve.Slot(hh)) {
		if seen.Holds(hh) {
			h.a.stats.InterimAgainDropped.Add(1)
			return true
		}
	}
	seen.Seen(hh)
	return false
}

// HeldAlready is the router's frontier.ReadyFilter: a URL this agent's own
// sieve found new, for an address it fetches from, is checked (and kept in
// the cache) as a ready URL received is.
func (r *clusterRouter) HeldAlready(rec []byte) bool { return r.a.clusterHost.readyAgain(rec, false) }
