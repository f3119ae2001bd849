package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/petrel-crawler/petrel/internal/sieve"
)

// Fencing by view (the rule, and why it is safe: doc.go's invariants).
// The receiver's fence rises when a view it installs moves slots away
// from it (noteLosses, before the view is in force); a batch whose epoch
// is older is refused with the fence's epoch (409, staleView). The
// sender keeps such a batch out of its sends and, once it holds a view
// at least as new as that epoch, routes its records again to their
// owners in it (Host.Owner) and removes it.
//
// The host routes under the view it read, without a lock against an
// install: a record routed in the instant a view is installed may be
// stamped with the newer epoch. If its owner changed, the receiver's
// host forwards it, as any record it no longer owns: the fence is exact
// but for that instant, and nothing is lost in it.

// viewFence is a receiver's fence by view and the sender's batches refused by one.
type viewFence struct {
	mu     sync.Mutex
	epoch  uint64 // the fence: refuse batches routed under an older view
	logged time.Time
	quiet  int // refusals not logged since logged

	refused batchSet[refusedBatch] // this sender's batches refused, not yet re-routed
	wake    chan struct{}          // a refusal to act on (capacity 1)
}

// refusedBatch is an outbox batch refused for its view, with the epoch of
// the view its records wait for.
type refusedBatch struct {
	e    OutEntry
	need uint64
}

// fenceLogEvery bounds the log of refusals: one line per period, with the
// count of those not logged.
const fenceLogEvery = 10 * time.Second

// startFence sets the fence to the view this process started with: what
// this agent gave away before is not known.
func (n *Node) startFence() {
	n.fence.mu.Lock()
	defer n.fence.mu.Unlock()
	n.fence.epoch = n.viewEpoch()
}

// noteLosses raises the fence to v when this agent gives slots in the
// change to v (moves: Moves(old, v)); called before v is in force.
func (n *Node) noteLosses(v *View, moves map[string]map[string]SlotSet) {
	if len(moves[n.cfg.Name]) > 0 {
		n.fence.mu.Lock()
		n.fence.epoch = max(n.fence.epoch, v.Epoch)
		n.fence.mu.Unlock()
	}
}

// fenceBatch refuses b if it was routed under a view older than the
// fence.
func (n *Node) fenceBatch(b *Batch) error {
	return n.fenced("batch", b.ID.String(), b.Epoch, &n.counts.staleRefused)
}

// fenceHandoff refuses a hand-off part cut under a view older than the
// fence: the receiver may have given its slots away since (their seen
// hashes and counts would stay with it), and a release would end holds
// of addresses it no longer owns. Its sender cuts it again
// (recutHandoff).
func (n *Node) fenceHandoff(h *Handoff) error {
	if h.Release {
		return n.fenced("hand-off release", h.ID(), h.cutView(), &n.counts.staleRefusedReleases)
	}
	return n.fenced("hand-off part", h.ID(), h.cutView(), &n.counts.staleRefusedParts)
}

// fenced refuses what (a batch, a hand-off part or release) of view
// epoch if that is older than the fence: counted in c, and logged at most
// once per fenceLogEvery.
func (n *Node) fenced(what, id string, epoch uint64, c *atomic.Uint64) error {
	f := &n.fence
	f.mu.Lock()
	fe := f.epoch
	if epoch >= fe {
		f.mu.Unlock()
		return nil
	}
	c.Add(1)
	log := time.Since(f.logged) >= fenceLogEvery
	quiet := f.quiet
	if log {
		f.logged, f.quiet = time.Now(), 0
	} else {
		f.quiet++
	}
	f.mu.Unlock()
	if log {
		n.log.Warn("cluster: "+what+" of an older view refused; its sender sends it again under a newer one",
			"id", id, "epoch", epoch, "fence", fe, "refused_unlogged", quiet)
	}
	return staleView(epoch, fe)
}

// recutHandoff delivers h, refused by to for a view older than need: once
// this agent holds a view v at least as new, h's seen hashes and counts
// go to their slots' owners in v and its release (with its waits) to to,
// last. The pieces keep h's epoch (the move they belong to: holds and
// awaited releases are keyed by it), carry v as the view they were cut
// under, and are numbered apart from the hand-off's own parts (recutSeq).
// A piece refused again is cut again under a newer view.
func (n *Node) recutHandoff(ctx context.Context, to string, h *Handoff, need uint64) error {
	if err := n.WaitView(ctx, func(v *View) bool { return v.Epoch >= need }); err != nil {
		return fmt.Errorf("cluster: hand-off to %s: %w", to, err)
	}
	n.counts.staleRecut.Add(1)
	v := n.View()
	pieces := map[string]*Handoff{}
	piece := func(owner string) *Handoff {
		if pieces[owner] == nil {
			pieces[owner] = &Handoff{Epoch: h.Epoch, View: v.Epoch, Seq: recutSeq(h, to, owner, v.Epoch)}
		}
		return pieces[owner]
	}
	for _, x := range h.Seen {
		p := piece(v.OwnerOfSlot(sieve.Slot(x)))
		p.Seen = append(p.Seen, x)
	}
	for k, c := range h.Counts {
		p := piece(v.OwnerOfSlot(sieve.Slot(k)))
		p.Counts = orEmpty(p.Counts)
		p.Counts[k] = c
	}
	if h.Release {
		r := piece(to)
		r.Release, r.Waits = true, h.Waits
	}
	for _, owner := range slices.Sorted(maps.Keys(pieces)) {
		if owner != to || !h.Release {
			if err := n.SendHandoff(ctx, owner, pieces[owner]); err != nil {
				return err
			}
		}
	}
	if h.Release {
		return n.SendHandoff(ctx, to, pieces[to])
	}
	return nil
}

// recutSeq numbers a piece of a part cut again: the top bit set, apart
// from the hand-off's own parts (numbered from 1), the rest a hash of
// what makes the piece (the part, its receiver, the piece's receiver and
// view), so that a hand-off resumed after a crash numbers the same pieces
// the same way and their receivers apply each once.
func recutSeq(h *Handoff, to, owner string, view uint64) uint64 {
	return 1<<63 | xxhash.Sum64String(fmt.Sprintf("%s/%d/%d/%s/%d", to, h.Seq, h.cutView(), owner, view))>>1
}

// noteRefused keeps e, refused by its receiver for a view older than
// need, out of the sends until rerouteRefused routes it again.
func (n *Node) noteRefused(e OutEntry, need uint64) {
	n.fence.refused.put(e.Dest, e.ID, refusedBatch{e, need})
	select {
	case n.fence.wake <- struct{}{}:
	default:
	}
}

// rerouteRefused routes again the refused batches whose view this agent
// holds. A batch for an agent out of the view is left to the outbox's
// re-routing for such agents (death.go), which the same loop runs
// (sender.go); each batch is routed and removed under the view lock, so
// no view change comes between.
func (n *Node) rerouteRefused(ctx context.Context) error {
	for _, r := range n.fence.refused.values() {
		if err := n.rerouteOne(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// rerouteOne routes one refused batch again, to the records' owners now
// (Host.Owner), if this agent holds its view.
func (n *Node) rerouteOne(ctx context.Context, r refusedBatch) error {
	v := n.View()
	if v == nil || v.Epoch < r.need {
		return nil // its view is not here yet: installing it wakes the loop
	}
	wire, err := n.outbox.Read(r.e)
	if err != nil {
		n.fence.refused.drop(r.e.Dest, r.e.ID) // removed meanwhile (death.go, forget)
		return nil
	}
	b, byDest, err := n.ownersNow(r.e, wire)
	if err != nil {
		return err
	}
	n.vc.mu.Lock() // no view installed meanwhile
	defer n.vc.mu.Unlock()
	if now := n.View(); now != v {
		return nil // routed under a view no longer in force: next round
	}
	defer n.fence.refused.drop(r.e.Dest, r.e.ID)
	if !v.Has(r.e.Dest) {
		return nil // death.go's re-routing takes it
	}
	if err := n.batch.putNow(ctx, b.Kind, v.Epoch, byDest); err != nil {
		return err
	}
	n.counts.staleRerouted.Add(1)
	return n.dropRerouted([]OutEntry{r.e}, len(b.Records))
}
