package cluster

import (
	"context"
	"maps"
	"slices"
	"time"
)

// Status is an agent's state as /v1/status reports it (petrel cluster
// status, termination detection).
type Status struct {
	Name        string    `json:"name"`
	Exchange    string    `json:"exchange"`
	Incarnation uint64    `json:"incarnation"`
	ViewEpoch   uint64    `json:"view_epoch"`
	Time        time.Time `json:"time"`

	Idle     bool   `json:"idle"`
	Activity uint64 `json:"activity"` // batches made or applied by this process
	Finished bool   `json:"finished"`
	Leaving  bool   `json:"leaving,omitempty"` // a leave begun and not finished (leave.go)

	Progress

	OutboxBatches  int    `json:"outbox_batches"`
	OutboxBytes    int64  `json:"outbox_bytes"`
	OutboxURLs     int64  `json:"outbox_urls"` // the records of the outbox's batches
	InboxBytes     int64  `json:"inbox_bytes"`
	InboxUnapplied int64  `json:"inbox_unapplied_bytes"`
	SentBatches    uint64 `json:"sent_batches"`
	SentURLs       uint64 `json:"sent_urls"`
	AppliedBatches uint64 `json:"received_batches"`
	AppliedURLs    uint64 `json:"received_urls"`
	Refused        uint64 `json:"refused_batches"`
	Duplicates     uint64 `json:"duplicate_batches"`
	InboxFull      uint64 `json:"inbox_full"`
	SendErrors     uint64 `json:"send_errors"`
	Rerouted       uint64 `json:"rerouted_urls"`            // URLs of batches for agents out of the view, sent to their new owners (death.go)
	ViewLagRefused uint64 `json:"view_lag_refused_batches"` // batches of ready URLs answered 503 until this agent installed the view they were routed under (receive.go)
	Fenced

	AwaitingFrom []string `json:"awaiting_from,omitempty"` // the old owners whose release this agent awaits (handoff.go)

	View *View `json:"view,omitempty"`
}

// Fenced are the counts of fencing by view since this process started
// (fence.go).
type Fenced struct {
	RefusedBatches  uint64 `json:"stale_view_refused_batches"`       // batches refused: routed under a view older than this agent's fence
	ReroutedBatches uint64 `json:"stale_view_rerouted_batches"`      // this agent's batches refused so, routed again under its newer view
	RefusedParts    uint64 `json:"stale_view_refused_handoff_parts"` // hand-off parts refused: cut under a view older than the fence
	RefusedReleases uint64 `json:"stale_view_refused_releases"`      // hand-off releases refused so
	Recut           uint64 `json:"stale_view_recut_handoff_parts"`   // this agent's parts and releases refused so, cut again under its newer view
}

// Fenced returns the counts of fencing by view.
func (n *Node) Fenced() Fenced {
	c := &n.counts
	return Fenced{RefusedBatches: c.staleRefused.Load(), ReroutedBatches: c.staleRerouted.Load(),
		RefusedParts: c.staleRefusedParts.Load(), RefusedReleases: c.staleRefusedReleases.Load(), Recut: c.staleRecut.Load()}
}

// Status returns the agent's state. Idle is taken so that work moving
// between the host and the node while it is read cannot be missed: the
// node's counters are read before and after the host's Idle, and must not
// have moved.
func (n *Node) Status() *Status {
	routed, act := n.batch.routed.Load(), n.activity.Load()
	nodeIdle := n.nodeIdle()
	hostIdle := n.host.Idle()
	// An agent not ready yet (a join: its view's members not all here) may
	// still be given work: it is not idle.
	idle := n.isReady() && nodeIdle && hostIdle && n.nodeIdle() &&
		routed == n.batch.routed.Load() && act == n.activity.Load()
	ob, obytes := n.outbox.Len()
	durable := n.inbox.Durable()
	now := time.Now().UTC()
	return &Status{
		Name: n.cfg.Name, Exchange: n.cfg.ExchangeAddr(), Incarnation: n.incarnation,
		ViewEpoch: n.viewEpoch(), Time: now,
		Idle: idle, Activity: act, Leaving: n.IsLeaving(),
		Progress:       n.host.Progress(),
		OutboxBatches:  ob,
		OutboxBytes:    obytes,
		OutboxURLs:     n.outbox.Records(),
		InboxBytes:     n.inbox.Size(),
		InboxUnapplied: durable - n.appliedAt.Load(),
		SentBatches:    n.counts.sentBatches.Load(),
		SentURLs:       n.counts.sentURLs.Load(),
		AppliedBatches: n.counts.appliedBatches.Load(),
		AppliedURLs:    n.counts.appliedURLs.Load(),
		Refused:        n.counts.refusedBatches.Load(),
		Duplicates:     n.counts.duplicateBatches.Load(),
		InboxFull:      n.counts.inboxFull.Load(),
		SendErrors:     n.counts.sendErrors.Load(),
		Rerouted:       n.counts.reroutedURLs.Load(),
		ViewLagRefused: n.counts.viewLagRefused.Load(),
		Fenced:         n.Fenced(),
		AwaitingFrom:   slices.Sorted(maps.Keys(n.Awaiting())),
		View:           n.View(),
		Finished:       closed(n.finished),
	}
}

func (n *Node) nodeIdle() bool {
	ob, _ := n.outbox.Len()
	return ob == 0 && n.batch.empty() && n.appliedAt.Load() >= n.inbox.Durable() && n.handoffIdle()
}

// SlotsOwned returns how many of the Slots each agent of v owns, by name:
// petrel cluster status's "keys owned" (a politeness key's group belongs
// to the owner of its slot, hrw.go). It hashes every slot against every
// agent: the command's work, not /v1/status's.
func (v *View) SlotsOwned() map[string]int {
	counts := make([]int, len(v.Agents))
	for s := uint64(0); s < Slots; s++ {
		if i := v.ownerIndex(s); i >= 0 {
			counts[i]++
		}
	}
	out := make(map[string]int, len(v.Agents))
	for i, a := range v.Agents {
		out[a.Name] = counts[i]
	}
	return out
}

// Traffic is what the exchange carried since this process started, for
// petrel bench exchange.
type Traffic struct {
	SentBatches, AppliedBatches uint64
	OutboxWritten, OutboxSyncs  int64 // the outbox log's bytes written and fsyncs
	InboxBytes, InboxSyncs      int64 // the inbox's bytes held and fsyncs
}

// Traffic returns what the exchange carried since this process started.
func (n *Node) Traffic() Traffic {
	return Traffic{SentBatches: n.counts.sentBatches.Load(), AppliedBatches: n.counts.appliedBatches.Load(),
		OutboxWritten: n.outbox.Written(), OutboxSyncs: n.outbox.Syncs(),
		InboxBytes: n.inbox.Size(), InboxSyncs: n.inbox.Syncs()}
}

// WaitSent returns once no routed record is gathered or being written
// and the outbox is empty (every batch acknowledged), or ctx ends.
func (n *Node) WaitSent(ctx context.Context) error { return n.waitOutbox(ctx, n.batch.empty) }

// waitOutbox returns once done holds and the outbox is empty, or ctx ends.
func (n *Node) waitOutbox(ctx context.Context, done func() bool) error {
	for {
		changed := n.outbox.Changed() // a batch written, or acknowledged
		if done() {
			if b, _ := n.outbox.Len(); b == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}
