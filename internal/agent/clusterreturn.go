package agent

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/sieve"
)

// The return of an agent declared dead. While it was absent, the interim
// owners of its keys admitted their URLs with an empty seen set, so they
// queued again, and fetched, URLs that it had fetched or queued before its
// death. At its return they hand its keys back: the seen-set part (merged
// into its sieve) and their queued URLs of its addresses (ready URLs,
// fetched without a sieve).
//
// A hash of a part that its sieve already held when the part arrived is a
// URL it knew before its death that an interim owner admitted again. Each
// such hash is a token, spent once, on the first of these to come:
//   - a ready URL handed back with that hash: an interim owner's copy,
//     dropped (ReturnKnownDropped);
//   - its own queued copy coming up for dispatch (frontier's
//     FetchedElsewhere): dropped unfetched (ReturnFetchedDropped).
//
// Of one URL this agent holds at most one copy of its own and is handed
// back at most one, so spending one token per URL leaves exactly the copies
// to fetch: none when it fetched the URL before its death and is handed it
// back, none when an interim owner fetched it (so is not handing it back)
// and its own copy was queued still, one when both it and an interim owner
// still queued it — whatever the order in which the two copies arrive. A
// token no copy spends (the URL was fetched before the death and again by
// an interim owner, or its address is another agent's) is kept harmlessly
// until the next return. What the interim owners fetched of what this
// agent had fetched, and what it fetched since the checkpoint a kill -9
// restores, is the duplicate a death costs.

// maxKnownAtReturn bounds the hashes kept: past it, a known URL handed back
// is fetched again (a duplicate, not a loss).
const maxKnownAtReturn = 1 << 20

// knownAtReturn is the set of hashes of handed-over seen-set parts that
// this agent's sieve held already: the URLs it knew before a death.
type knownAtReturn struct {
	returnEpoch atomic.Uint64 // the epoch of this agent's return (0: none)
	n           atomic.Int64  // len(m), read without the lock
	mu          sync.Mutex
	m           map[uint64]struct{}
}

// add keeps hs; it runs as a part is applied, before the ready URLs of the
// same hand-off are (the applier waits for the release).
func (k *knownAtReturn) add(hs []uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[uint64]struct{}{}
	}
	for _, h := range hs {
		if len(k.m) >= maxKnownAtReturn {
			return
		}
		k.m[h] = struct{}{}
		k.n.Store(int64(len(k.m)))
	}
}

// take reports whether h is kept, and forgets it: a token is spent once.
func (k *knownAtReturn) take(h uint64) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.m[h]; !ok {
		return false
	}
	delete(k.m, h)
	k.n.Store(int64(len(k.m)))
	return true
}

// reset forgets every hash (a new return starts afresh).
func (k *knownAtReturn) reset() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m = nil
	k.n.Store(0)
}

// handedBackKnown reports whether the ready record rec is a URL this agent
// knew before its death, handed back at its return (see above).
func (h *clusterHost) handedBackKnown(rec []byte) bool {
	if !h.spendKnown(rec[frontier.MetaLen:]) {
		return false
	}
	h.a.stats.ReturnKnownDropped.Add(1)
	return true
}

// fetchedElsewhere returns the frontier's FetchedElsewhere (nil for an
// agent crawling alone): a queued URL of this agent's own whose token is
// unspent was fetched by an interim owner (see above).
func (h *clusterHost) fetchedElsewhere() func(url string) bool {
	if h == nil {
		return nil
	}
	return func(url string) bool {
		if !h.spendKnown([]byte(url)) {
			return false
		}
		h.a.stats.ReturnFetchedDropped.Add(1)
		return true
	}
}

// spendKnown spends the token of url, reporting whether it had one.
func (h *clusterHost) spendKnown(url []byte) bool {
	if h.ho.known.n.Load() == 0 {
		return false // no return under way: nothing to compute
	}
	return h.ho.known.take(sieve.KeyHash(h.a.cfg.Frontier.Assign.GroupHash(url), url))
}

// noteReturn follows a view change for the tokens, and for the keys taken
// over (noteTakeover): a return starts afresh
// (the parts of its epoch give the tokens); any other change keeps them,
// for this agent's own queued copies may come up for dispatch long after.
func (h *clusterHost) noteReturn(c cluster.ViewChange) {
	h.noteTakeover(c) // clusterinterim.go
	if c.Return {
		h.ho.known.reset()
		h.ho.known.returnEpoch.Store(c.New.Epoch)
		h.holdReturned(c.Old, c.New)
	}
}

// holdReturned holds every address a return gives back to this agent
// until the releases of all its old owners are in: each old owner's
// release ends only its own hold, and the tokens of a part from another
// (the owner of the addresses' keys) must be in before this agent's own
// queued copies of those addresses come up for dispatch.
func (h *clusterHost) holdReturned(old, nw *cluster.View) {
	a, self := h.a, h.a.cfg.Cluster.Agent
	f, n := a.frontier, a.node // the close sets the agent's to nil
	mine := func(ad netip.Addr) bool {
		g := ipGroup(ad)
		return nw.Owner(g) == self && old.Owner(g) != self
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := f.HoldAddrs(ctx, mine)
	if err != nil {
		a.log.Error("cluster: return: hold the addresses given back", "err", err)
		return
	}
	go func() {
		// Owned by the node: its close ends the wait (the agent is
		// stopping; the hold ends with its frontier).
		wait, cancel := context.WithTimeout(n.Context(), returnHoldMax)
		defer cancel()
		n.WaitReleases(wait)
		if n.Context().Err() != nil {
			return
		}
		ctx, cancel2 := context.WithTimeout(n.Context(), 10*time.Second)
		defer cancel2()
		if err := f.ReleaseAddrs(ctx, id, nil); err != nil {
			a.log.Error("cluster: return: release the addresses given back", "err", err)
		}
	}()
}

// returnHoldMax bounds holdReturned's wait for the releases (an old owner
// that dies meanwhile sends none).
const returnHoldMax = 2 * time.Minute

// insertSeen puts a part's seen hashes into the sieve and, for a part of a
// return's hand-back (report), returns and keeps those it held already.
func (h *clusterHost) insertSeen(p *cluster.Handoff, report bool) ([]uint64, error) {
	if !report {
		_, err := h.a.sieve.InsertHashes(p.Seen)
		return nil, err
	}
	known, err := h.a.sieve.InsertHashesKnown(p.Seen)
	if err == nil && len(known) > 0 {
		h.ho.known.add(known)
		h.a.log.Info("cluster: return: seen-set entries handed back that this agent knew before its death; one copy of each of their URLs, handed back or queued here, is dropped",
			"from", p.From, "epoch", p.Epoch, "known", len(known), "of", len(p.Seen))
	}
	return known, err
}
