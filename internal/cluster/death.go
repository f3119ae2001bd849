package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// Death of an agent (kill -9, machine lost, network partition) is
// decided by the crawl's writer of views (package coord): once the
// agent's lease has expired in etcd and --cluster-grace more has passed
// (its requests cut at its fence have ended and the delays it owed have
// run out), a view lists it absent and its keys belong to the others. No
// release is waited for from an absent agent. An absent agent keeps the
// crawl open: it may hold URLs nobody else has (its queues, its outbox).
// When it registers again, the writer puts it back in the view, and the
// interim owners hand its keys back as at any join.
//
// Every agent re-routes the batches its outbox holds for an agent that is
// not in its view (rerouteOutbox, in the node's re-routing loop: sender.go):
// each record goes to its owner in the
// current view, through the outbox again (durable) before the old batch
// is removed, so nothing is lost. For an agent listed absent, which may
// come back, only the batches never sent to it are re-routed: one sent
// may be in its inbox already (its acknowledgement lost in the death), and
// a URL out of a sieve (KindReady) applied twice is fetched twice — no
// sieve stands after it. Those wait for its return (it recognises a batch
// it holds by its id) or for a forget, which re-routes everything (a
// duplicate is better than a loss). A batch counts as sent from its first
// attempt in this process: after a restart of the sender, a batch sent
// before it counts as never sent.

// rerouteBatches bounds the batches re-routed in one round.
const rerouteBatches = 64

// rerouteOutbox gives the batches held for agents not in v to the records'
// owners in v, at most rerouteBatches per agent; more reports whether an
// agent had more. Each old batch's records are written to the outbox at
// once, as batches routed under v (the host's Owner says where each
// record goes), without waiting for room: the old batch's removal
// follows, so the outbox holds one batch over its bound at most, and a
// destination full of batches only this loop can move does not stop it.
func (n *Node) rerouteOutbox(ctx context.Context, v *View) (more bool, err error) {
	if v == nil {
		return false, nil
	}
	for _, dest := range n.outbox.Dests() {
		if v.Has(dest) || dest == n.cfg.Name {
			continue
		}
		var skip func(BatchID) bool
		if slices.Contains(v.Absent, dest) || n.leftKeeps(dest, v) {
			skip = func(id BatchID) bool { return n.tried.has(dest, id) }
		}
		entries := n.outbox.Pending(dest, rerouteBatches, skip)
		if len(entries) == 0 {
			continue
		}
		more = more || len(entries) == rerouteBatches
		urls := 0
		for _, e := range entries {
			wire, err := n.outbox.Read(e)
			if err != nil {
				return more, err
			}
			b, byOwner, err := n.ownersNow(e, wire)
			if err != nil {
				return more, err
			}
			if err := n.batch.putNow(ctx, b.Kind, v.Epoch, byOwner); err != nil {
				return more, err
			}
			if err := n.dropRerouted([]OutEntry{e}, len(b.Records)); err != nil {
				return more, err
			}
			urls += len(b.Records)
		}
		n.log.Info("cluster: batches for an agent not in the view re-routed to the owners of their URLs",
			"agent", dest, "batches", len(entries), "urls", urls, "view", v.String())
	}
	return more, nil
}

// ownersNow decodes wire, the outbox batch e, and groups its records by
// their owner now (Host.Owner; this agent when none).
func (n *Node) ownersNow(e OutEntry, wire []byte) (*Batch, map[string][][]byte, error) {
	b, err := DecodeBatch(wire)
	if err != nil {
		return nil, nil, fmt.Errorf("batch %s for %s: %w", e.ID, e.Dest, err)
	}
	byOwner := map[string][][]byte{}
	for _, rec := range b.Records {
		to := n.host.Owner(b.Kind, rec)
		if to == "" {
			to = n.cfg.Name
		}
		byOwner[to] = append(byOwner[to], rec)
	}
	return b, byOwner, nil
}

// dropRerouted removes the outbox batches es, whose urls records are
// routed again durably, and counts them.
func (n *Node) dropRerouted(es []OutEntry, urls int) error {
	for _, e := range es {
		n.tried.drop(e.Dest, e.ID)
		if err := n.outbox.Ack(e); err != nil {
			return err
		}
	}
	n.counts.reroutedURLs.Add(uint64(urls))
	return nil
}

// batchSet holds outbox batches, each with a value. A batch is known by
// its destination and its id: sequence numbers count per destination
// (batcher.write), so the batch of one id sent to another agent is
// another batch. The node's tried set holds the batches this process has
// sent at least once and not had acknowledged (perhaps in their
// receiver's inbox); its fence's refused set, those refused for their
// view (fence.go).
type batchSet[V any] struct {
	mu sync.Mutex
	m  map[batchKey]V
}

type batchKey struct {
	dest string
	id   BatchID
}

func (s *batchSet[V]) put(dest string, id BatchID, v V) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m = orEmpty(s.m)
	s.m[batchKey{dest, id}] = v
}

func (s *batchSet[V]) drop(dest string, id BatchID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, batchKey{dest, id})
}

func (s *batchSet[V]) has(dest string, id BatchID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[batchKey{dest, id}]
	return ok
}

// values returns the values held, in no order.
func (s *batchSet[V]) values() []V {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Values(s.m))
}

// Batches for an agent that left the view deliberately (a leave, not a
// death: it is not listed absent). The outbox may hold batches for it
// that were sent and not acknowledged — in flight when the view without
// it came, or sent before its acknowledgement was lost to a crash of it
// in the middle of its leave. Such a batch may be in its inbox already:
// applied there, its URLs were handed over or forwarded, and a second copy
// routed to their new owners would be applied twice (a ready URL,
// which no sieve stands after, fetched twice). So those batches are not
// re-routed while the agent that left is alive, nor for the grace period
// G after it was last seen alive: the sender delivers them to it instead,
// and it acknowledges the ones it holds (by their id) and forwards the
// others like any URL for keys it no longer owns. A resumed leave (a
// restart after a kill in the middle) makes it alive again for that.
// Past G without it, they are re-routed: a possible duplicate rather than
// a loss. Batches never sent to it are re-routed at once.

// leftSeen records when each agent that left the view was last alive.
type leftSeen struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// leftKeeps reports whether the batches sent to dest (not in v, not
// absent from it) wait instead of being re-routed.
func (n *Node) leftKeeps(dest string, v *View) bool {
	if v.Has(dest) || slices.Contains(v.Absent, dest) {
		return false
	}
	n.left.mu.Lock()
	defer n.left.mu.Unlock()
	n.left.last = orEmpty(n.left.last)
	if n.exchangeOf(dest) != "" {
		n.left.last[dest] = time.Now()
		return true
	}
	t, ok := n.left.last[dest]
	if !ok {
		t = n.started
	}
	return time.Since(t) < n.cfg.Grace
}

// leftResend keeps, of the batches the sender would send to dest, an
// agent that left v and is alive, only those sent before (perhaps in its
// inbox); nil for any other destination outside v.
func (n *Node) leftResend(dest string, v *View, batch []OutEntry) []OutEntry {
	if v == nil || v.Has(dest) || slices.Contains(v.Absent, dest) {
		return nil
	}
	return slices.DeleteFunc(batch, func(e OutEntry) bool { return !n.tried.has(dest, e.ID) })
}
