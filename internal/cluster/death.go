package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Death of an agent (kill -9, machine lost, network partition).
//
// Every agent notes when each member of its view stops being alive in
// memberlist (declared dead, or gone). The coordinator (Node.Coordinator),
// while its own zombie guard is open and a strict majority of the view's
// agents is alive, proposes a view without the members dead for the grace
// period G (grace.go): they are listed in the new view's Absent, own no
// keys, and their keys belong to the others from that epoch on. No release
// is waited for: past G the dead agent starts no request (its guard closed
// at G/2 without a gossip round), and any delay it owed has run out.
//
// The majority rule keeps a partition from making two views: the side
// without a majority takes nothing over, and its agents, which cannot see
// a majority either, stop at G/2 once their probes of the others fail. A
// crawl of two agents therefore never takes over automatically; `petrel
// cluster forget` does it (forget.go).
//
// An absent agent keeps the crawl open (termination.go): it may hold URLs
// nobody else has (its queues, its outbox). When it is alive again (a
// restart on its directory, or a stopped process resumed) and agrees, the
// coordinator proposes a view with it back; the interim owners hand its
// keys back at that epoch as at any join (the host's ViewChanged).
//
// Every agent re-routes the batches its outbox holds for an agent that is
// not in its view (rerouteOutbox): each record goes to its owner in the
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

// Rerouter is what a Host adds to re-route records whose destination left
// the view: the agent that owns the record now ("" for this agent) — for
// KindURLs the owner of its key's group, for KindReady the owner of its
// host's address.
type Rerouter interface {
	Owner(kind Kind, rec []byte) string
}

// absentAfter is the Absent list of a view that follows one with absent,
// the agents add joining: those come back.
func absentAfter(absent []string, add []ViewAgent) []string {
	var out []string
	for _, a := range absent {
		if !slices.ContainsFunc(add, func(b ViewAgent) bool { return b.Name == a }) {
			out = append(out, a)
		}
	}
	return out
}

// withAbsent sets v's Absent to names (sorted, once each); v must not be
// shared yet.
func withAbsent(v *View, names []string) *View {
	as := slices.Clone(names)
	slices.Sort(as)
	v.Absent = slices.Compact(as)
	return v
}

// deathLoop notes the deaths of the view's members, takes over the keys of
// those dead for G, brings absent agents back when they return, and
// re-routes the outbox of agents not in the view.
func (n *Node) deathLoop(ctx context.Context) {
	select {
	case <-n.ready:
	case <-ctx.Done():
		return
	}
	t := time.NewTicker(max(n.cfg.Timing.probe()/2, 20*time.Millisecond))
	defer t.Stop()
	since := map[string]time.Time{} // members of the view not alive, since when
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		v := n.View()
		if v == nil {
			continue
		}
		alive := n.aliveNames()
		n.noteDeaths(v, alive, since)
		if err := n.rerouteOutbox(ctx, v); err != nil {
			n.log.Error("cluster: re-route the outbox of agents not in the view", "err", err)
		}
		if n.Coordinator() != n.cfg.Name || !n.guard.Allowed() {
			continue
		}
		n.pollStatuses(ctx, v)
		if err := n.takeOver(ctx, v, alive, since); err != nil {
			n.log.Warn("cluster: takeover", "err", err)
		}
		if err := n.bringBack(ctx, v, alive); err != nil {
			n.log.Warn("cluster: rejoin", "err", err)
		}
	}
}

func (n *Node) aliveNames() map[string]bool {
	alive := map[string]bool{n.cfg.Name: true}
	for _, m := range n.aliveMembers() {
		alive[m.Name] = true
	}
	return alive
}

// noteDeaths updates since: when each member of v was last seen leaving
// the alive state.
func (n *Node) noteDeaths(v *View, alive map[string]bool, since map[string]time.Time) {
	for name := range since {
		if alive[name] || !v.Has(name) {
			delete(since, name)
		}
	}
	for _, name := range v.Names() {
		if alive[name] {
			continue
		}
		if _, ok := since[name]; !ok {
			since[name] = time.Now()
			n.log.Warn("cluster: member of the view is not alive; its keys are taken over after the grace period unless it returns",
				"agent", name, "grace", n.cfg.Grace.String())
		}
	}
}

// takeOver proposes a view without the members dead for G, if a strict
// majority of v is alive.
func (n *Node) takeOver(ctx context.Context, v *View, alive map[string]bool, since map[string]time.Time) error {
	var due []string
	for name, t := range since {
		if time.Since(t) >= n.cfg.Grace {
			due = append(due, name)
		}
	}
	if len(due) == 0 {
		return nil
	}
	up := 0
	for _, name := range v.Names() {
		if alive[name] {
			up++
		}
	}
	if 2*up <= len(v.Agents) {
		return nil // no majority here: perhaps the other side of a partition
	}
	slices.Sort(due)
	nv, err := NextView(v, nil, due...)
	if err != nil {
		return err
	}
	withAbsent(nv, append(slices.Clone(v.Absent), due...))
	n.log.Warn("cluster: taking over the keys of dead agents", "dead", due, "grace", n.cfg.Grace.String(), "view", nv.String())
	return n.proposeWhileCurrent(ctx, v, nv, fmt.Sprintf("takeover: %v dead for the grace period %s", due, n.cfg.Grace))
}

// bringBack proposes a view with an absent agent back once it is alive
// and its settings agree.
func (n *Node) bringBack(ctx context.Context, v *View, alive map[string]bool) error {
	if _, ok := n.host.(ViewChangeHost); !ok {
		return nil // no hand-off of keys: the interim owners could not give them back
	}
	for _, name := range v.Absent {
		// It must hold this view first (it learns it by gossip), so that
		// it sees the keys it gets back as moving to it and awaits their
		// releases.
		if !alive[name] || !n.isAgreed(name) || n.announcedEpoch(name) != v.Epoch {
			continue
		}
		nv, err := NextView(v, []ViewAgent{{Name: name, Weight: n.weightOf(name)}})
		if err != nil {
			return err
		}
		n.log.Info("cluster: absent agent is back; giving its keys back", "agent", name, "view", nv.String())
		return n.proposeWhileCurrent(ctx, v, nv, "rejoin of "+name)
	}
	return nil
}

// announcedEpoch is the view epoch an alive member gossips (0: none).
func (n *Node) announcedEpoch(name string) uint64 {
	for _, m := range n.aliveMembers() {
		if m.Name == name {
			return m.Meta.ViewEpoch
		}
	}
	return 0
}

func (n *Node) weightOf(name string) uint32 {
	for _, m := range n.aliveMembers() {
		if m.Name == name {
			return m.Meta.Weight
		}
	}
	return 0
}

// proposeWhileCurrent proposes nv if v is still the view; a conflict
// (another proposal won) is not an error: the next round sees the newer
// view.
func (n *Node) proposeWhileCurrent(ctx context.Context, v, nv *View, reason string) error {
	if n.View() != v {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := n.ProposeView(pctx, nv, reason)
	if errors.Is(err, ErrViewConflict) {
		return nil
	}
	return err
}

// rerouteBatches bounds the batches re-routed in one round.
const rerouteBatches = 64

// rerouteOutbox gives the batches held for agents not in v to the records'
// owners in v: each record is routed again (through the batcher and the
// outbox: durable once Flush returns), then the old batch is removed. It
// needs a Host that is a Rerouter.
func (n *Node) rerouteOutbox(ctx context.Context, v *View) error {
	rr, ok := n.host.(Rerouter)
	if !ok {
		return nil
	}
	for _, dest := range n.outbox.Dests() {
		if v.Has(dest) || dest == n.cfg.Name {
			continue
		}
		var skip func(BatchID) bool
		if slices.Contains(v.Absent, dest) || n.leftKeeps(dest, v) { // leftdest.go
			skip = n.tried.sentTo(dest)
		}
		entries := n.outbox.Pending(dest, rerouteBatches, skip)
		if len(entries) == 0 {
			continue
		}
		urls := 0
		for _, e := range entries {
			wire, err := n.outbox.Read(e)
			if err != nil {
				return err
			}
			b, err := DecodeBatch(wire)
			if err != nil {
				return fmt.Errorf("batch %s for %s: %w", e.ID, dest, err)
			}
			for _, rec := range b.Records {
				to := rr.Owner(b.Kind, rec)
				if to == "" {
					to = n.cfg.Name
				}
				if err := n.batch.add(ctx, to, b.Kind, rec); err != nil {
					return err
				}
			}
			urls += len(b.Records)
		}
		if err := n.Flush(); err != nil {
			return err
		}
		for _, e := range entries {
			n.tried.drop(dest, e.ID)
			if err := n.outbox.Ack(e); err != nil {
				return err
			}
		}
		n.counts.reroutedBatches.Add(uint64(len(entries)))
		n.counts.reroutedURLs.Add(uint64(urls))
		n.log.Info("cluster: batches for an agent not in the view re-routed to the owners of their URLs",
			"agent", dest, "batches", len(entries), "urls", urls, "view", v.String())
	}
	return nil
}

// triedBatches is the set of outbox batches this process has sent at
// least once and not had acknowledged: perhaps in their receiver's inbox.
// A batch is known by its destination and its id: sequence numbers count
// per destination (batcher.write), so the batch of one id sent to another
// agent is another batch, whose acknowledgement says nothing of this one.
type triedBatches struct {
	mu  sync.Mutex
	ids map[triedKey]bool
}

type triedKey struct {
	dest string
	id   BatchID
}

func (t *triedBatches) mark(dest string, id BatchID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ids == nil {
		t.ids = map[triedKey]bool{}
	}
	t.ids[triedKey{dest, id}] = true
}

func (t *triedBatches) drop(dest string, id BatchID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.ids, triedKey{dest, id})
}

func (t *triedBatches) has(dest string, id BatchID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ids[triedKey{dest, id}]
}

// sentTo is has for the batches of dest (an outbox's Pending skip).
func (t *triedBatches) sentTo(dest string) func(BatchID) bool {
	return func(id BatchID) bool { return t.has(dest, id) }
}
