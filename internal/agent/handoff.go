package agent

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/sieve"
)

// The agent's part of a view change (the protocol: the cluster package's
// handoff.go). As the new owner of some slots it holds the addresses
// moving to it until their old owner's release, and takes the parts sent
// to it into its sieve and its per-key counts; as an old owner it hands
// over what it gives (handOver).

// handoffState is the clusterHost's part of hand-offs.
type handoffState struct {
	mu       sync.Mutex
	holds    map[string][]addrHold // by old owner, until its release
	busy     sync.WaitGroup        // hand-offs this agent is sending
	out      atomic.Int32          // hand-offs being sent
	leaveNow chan struct{}         // closed to resume a leave begun by an earlier process (leaveFirst)
	resumed  sync.Once
	known    knownAtReturn // clusterreturn.go

	moved      movedLog   // leavemoved.go
	cut        sync.Mutex // held from a part's sieve insert to its frame in counts, and by a checkpoint's cut (clusterreturncounts.go)
	counts     *countsLog // counts received, durable on receipt (countslog.go)
	countsOnce sync.Once
	countsErr  error
}

// addrHold is a frontier hold of the addresses moved to this agent at
// epoch, awaiting their old owner's release.
type addrHold struct {
	epoch, id uint64
}

// takeHolds removes and returns the holds that match selects, by the
// old owner the addresses moved from.
func (h *clusterHost) takeHolds(match func(from string, hd addrHold) bool) []addrHold {
	h.ho.mu.Lock()
	defer h.ho.mu.Unlock()
	var taken []addrHold
	for from, hs := range h.ho.holds {
		h.ho.holds[from] = slices.DeleteFunc(hs, func(hd addrHold) bool {
			if match(from, hd) {
				taken = append(taken, hd)
				return true
			}
			return false
		})
	}
	return taken
}

// holdLocked holds the addresses of slots moved from from at epoch; h.ho.mu held.
func (h *clusterHost) holdLocked(ctx context.Context, from string, epoch uint64, set cluster.SlotSet) {
	if h.ho.holds == nil {
		h.ho.holds = map[string][]addrHold{}
	}
	id, err := h.a.frontier.HoldAddrs(ctx, func(ad netip.Addr) bool { return set.Has(cluster.SlotOf(ipGroup(ad))) })
	if err != nil {
		h.a.log.Error("cluster: hold moved addresses", "from", from, "err", err)
	}
	h.ho.holds[from] = append(h.ho.holds[from], addrHold{epoch: epoch, id: id})
}

// ResumeHolds holds again, at a start, the addresses moved to this agent
// whose release an earlier process awaited, and keeps the waits of the
// releases it received (cluster.Host).
func (h *clusterHost) ResumeHolds(holds []cluster.PendingHold, notBefore map[string]time.Time) {
	h.ho.mu.Lock()
	defer h.ho.mu.Unlock()
	for _, p := range holds {
		h.holdLocked(context.Background(), p.From, p.Epoch, p.Slots)
	}
	h.resumeReturn(holds) // clusterreturncounts.go
	waits := map[netip.Addr]time.Duration{}
	for s, t := range notBefore {
		if ad, err := netip.ParseAddr(s); err == nil && time.Until(t) > 0 {
			waits[ad] = time.Until(t)
		}
	}
	h.a.frontier.DelayAddrs(waits)
	if len(holds) > 0 || len(waits) > 0 {
		h.a.log.Info("cluster: hand-off holds resumed", "holds", len(holds), "addresses waiting", len(waits))
	}
}

// resumeGiving runs again the hand-offs an earlier process had begun as an
// old owner and not finished (once the node is ready; they wait for the
// frontier to run). Each was recorded as its view, read back from etcd,
// was installed: the crawl's view, so it is resumed as it stands.
func (h *clusterHost) resumeGiving() {
	for _, c := range h.a.node.PendingGiving() {
		if len(c.Give) == 0 {
			if err := h.a.node.GivingDone(c.New.Epoch); err != nil {
				h.a.log.Error("cluster: hand-off", "epoch", c.New.Epoch, "err", err)
			}
			continue
		}
		h.a.log.Info("cluster: resuming an unfinished hand-off", "from", c.Old.String(), "to", c.New.String(), "giving", len(c.Give))
		h.goHandOver(c.New, c.Give)
	}
}

// goHandOver sends the hand-off of out at nw in the background, until the
// node's context ends (closeCluster waits for it).
func (h *clusterHost) goHandOver(nw *cluster.View, out map[string]cluster.SlotSet) {
	h.ho.out.Add(1)
	h.ho.busy.Go(func() {
		defer h.ho.out.Add(-1)
		if err := h.handOver(nw, out); err != nil {
			h.a.log.Error("cluster: hand-off", "epoch", nw.Epoch, "err", err)
		}
	})
}

// ViewChanged runs just before the new view is in force here: it holds
// the addresses moving to this agent and starts its hand-off of what it
// gives (none when the view declares it dead: clusterdeath.go).
func (h *clusterHost) ViewChanged(c cluster.ViewChange) {
	a, old, nw := h.a, c.Old, c.New
	h.noteReturn(c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h.ho.mu.Lock()
	for _, from := range nw.Absent {
		// A dead agent sends no release: what it held moves without one.
		for _, hd := range h.ho.holds[from] {
			a.frontier.ReleaseAddrs(ctx, hd.id, nil)
		}
		delete(h.ho.holds, from)
	}
	for _, p := range c.Holds {
		h.holdLocked(ctx, p.From, p.Epoch, p.Slots)
	}
	h.ho.mu.Unlock()
	h.noteDeclaredDead(c)
	a.shareRevisitBudget(nw) // clusterrevisits.go
	a.log.Info("cluster: view change", "from", old.String(), "to", nw.String(), "giving", len(c.Give))
	if len(c.Give) > 0 {
		h.goHandOver(nw, c.Give)
	}
}

// handingOver reports whether a hand-off is being sent.
func (h *clusterHost) handingOver() bool { return h.ho.out.Load() > 0 }

// handOver sends what this agent gives up at view nw to each new owner:
// after a routing barrier (and, in a leave, its checkpoint:
// leaveCheckpoint), the seen-set parts and budget counts, then the queued
// URLs of the addresses given up (until none is in flight), then each
// owner's release with the addresses' remaining waits.
func (h *clusterHost) handOver(nw *cluster.View, out map[string]cluster.SlotSet) error {
	a := h.a
	n := a.node
	ctx := n.Context()
	// The router answers with nw from when the view is in force; then
	// every URL routed under the old view has reached the sieve.
	if err := n.WaitView(ctx, func(v *cluster.View) bool { return v.Epoch >= nw.Epoch }); err != nil {
		return err
	}
	a.frontier.RouteBarrier()
	if n.IsLeaving() {
		h.leaveCheckpoint(ctx)
	}
	// Nothing more is dispatched to the addresses given up from here
	// (drainMovedOut waits for what is in flight).
	until := giveUpTimes{}
	_, w, err := a.frontier.MoveOut(ctx)
	if err != nil {
		return fmt.Errorf("move out: %w", err)
	}
	until.keep(w)
	owners := slotOwners(out)
	seq, sentSeen, err := h.sendSeenAndCounts(ctx, nw.Epoch, owners)
	if err != nil {
		return err
	}
	if err := h.drainMovedOut(ctx, until); err != nil {
		return err
	}
	// The moved URLs are durable in the outbox before the release.
	if err := h.sealMoved(ctx); err != nil { // leavemoved.go
		return err
	}
	if err := n.Flush(); err != nil {
		return err
	}
	untilAt, err := n.GivingUntil(nw.Epoch, addrTimes(until))
	if err != nil {
		return err
	}
	if n.IsLeaving() {
		n.ReportLeaving(ctx) // the figures a forget gives up if it is killed from here on
		a.crash.reach("leave-moved")
	}
	if err := h.sendReleases(ctx, nw.Epoch, owners, seq, untilAt); err != nil {
		return err
	}
	dropped, err := a.sieve.DeleteSlots(func(s uint32) bool { return owners.of(s) != "" })
	if err != nil {
		return fmt.Errorf("drop the seen set given up: %w", err)
	}
	a.stats.HandedOverSeen.Add(int64(sentSeen))
	a.log.Info("cluster: hand-off done", "epoch", nw.Epoch, "to", len(out), "seen", sentSeen, "dropped", dropped, "addresses", len(untilAt))
	if err := n.GivingDone(nw.Epoch); err != nil {
		return err
	}
	// The revisit schedule's entries of the addresses given up follow
	// them; one that stays (an error) moves when it comes due.
	if err := a.moveAllRevisits(); err != nil { // clusterrevisits.go
		a.log.Error("cluster: hand-off: revisit schedule entries not moved", "epoch", nw.Epoch, "err", err)
	}
	return nil
}

// slotOwners maps each new owner to the slots this agent gives it.
type slotOwners map[string]cluster.SlotSet

// of returns the new owner of slot, or "" when this agent keeps it.
func (o slotOwners) of(slot uint32) string {
	for to, set := range o {
		if set.Has(slot) {
			return to
		}
	}
	return ""
}

// giveUpTimes holds the earliest next request to each address given up.
type giveUpTimes map[netip.Addr]time.Time

// keep raises each address's time to now plus its wait, if later.
func (u giveUpTimes) keep(w map[netip.Addr]time.Duration) {
	now := time.Now()
	for ad, d := range w {
		if t := now.Add(d); t.After(u[ad]) {
			u[ad] = t
		}
	}
}

// sendSeenAndCounts sends each new owner its part of the seen set and its
// keys' budget counts, in parts within the exchange's bound
// (cluster.HandoffParts). It returns the last part's sequence number per
// owner and the hashes sent.
func (h *clusterHost) sendSeenAndCounts(ctx context.Context, epoch uint64, owners slotOwners) (map[string]uint64, int, error) {
	a := h.a
	seen := map[string][]uint64{}
	err := a.sieve.ExtractSlots(func(s uint32) bool { return owners.of(s) != "" }, func(hh uint64) error {
		to := owners.of(sieve.Slot(hh))
		seen[to] = append(seen[to], hh)
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("extract the seen set: %w", err)
	}
	counts := map[string]map[uint64]int64{}
	for k, c := range a.frontier.TakeCounts(func(slot uint32) bool { return owners.of(slot) != "" }) {
		to := owners.of(sieve.Slot(k))
		if counts[to] == nil {
			counts[to] = map[uint64]int64{}
		}
		counts[to][k] = c
	}
	seq := map[string]uint64{}
	var sent int
	for to := range owners {
		for _, part := range cluster.HandoffParts(epoch, 1, seen[to], counts[to]) {
			if err := a.node.SendHandoff(ctx, to, part); err != nil {
				return nil, 0, err
			}
			seq[to] = part.Seq
			sent += len(part.Seen)
		}
	}
	return seq, sent, nil
}

// drainMovedOut moves out the queued URLs of the addresses given up until
// no request to them is in flight, keeping each address's wait: a round
// again each time the frontier takes a task back. Every round counts: a
// round sees only what it moves and what is in flight.
func (h *clusterHost) drainMovedOut(ctx context.Context, until giveUpTimes) error {
	for {
		released := h.a.frontier.Released()
		inFlight, w, err := h.a.frontier.MoveOut(ctx)
		if err != nil {
			return fmt.Errorf("move out: %w", err)
		}
		until.keep(w)
		if inFlight == 0 {
			return nil
		}
		select {
		case <-released:
		case <-ctx.Done():
			return fmt.Errorf("move out: %w", ctx.Err())
		}
	}
}

// sendReleases sends each new owner its release for epoch, with the
// remaining wait of each address of its slots.
func (h *clusterHost) sendReleases(ctx context.Context, epoch uint64, owners slotOwners, seq map[string]uint64, untilAt map[string]time.Time) error {
	for to, set := range owners {
		ws := map[string]time.Duration{}
		for s, t := range untilAt {
			if ad, err := netip.ParseAddr(s); err == nil && set.Has(cluster.SlotOf(ipGroup(ad))) {
				ws[s] = max(time.Until(t), 0)
			}
		}
		part := &cluster.Handoff{Epoch: epoch, Seq: seq[to] + 1, Release: true, Waits: ws}
		if err := h.a.node.SendHandoff(ctx, to, part); err != nil {
			return err
		}
		h.a.crash.reach("handoff-release")
	}
	return nil
}

// addrTimes keys times by the address's text, as awaiting.json does.
func addrTimes(m map[netip.Addr]time.Time) map[string]time.Time {
	out := make(map[string]time.Time, len(m))
	for ad, t := range m {
		out[ad.String()] = t
	}
	return out
}

// ApplyHandoff takes a part sent by an old owner.
func (h *clusterHost) ApplyHandoff(p *cluster.Handoff) error {
	a := h.a
	if err := h.applySeenAndCounts(p); err != nil { // clusterreturncounts.go
		return err
	}
	if !p.Release {
		return nil
	}
	waits := map[netip.Addr]time.Duration{}
	for s, d := range p.Waits {
		if ad, err := netip.ParseAddr(s); err == nil {
			waits[ad] = d
		}
	}
	// The release ends the holds of its epoch and of earlier ones from
	// the same agent: it was sent once nothing it had given up was in
	// flight.
	ended := h.takeHolds(func(from string, hd addrHold) bool { return from == p.From && hd.epoch <= p.Epoch })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, hd := range ended {
		if err := a.frontier.ReleaseAddrs(ctx, hd.id, waits); err != nil {
			return err
		}
	}
	return nil
}

// errLeaveTimeout is Run's error when a leave did not finish in time.
var errLeaveTimeout = errors.New("cluster: leave not finished within --leave-timeout: state saved as at a clean stop; the other agents treat this one as dead")

// leaveFirst returns the context Run runs under and its cancel. In a crawl
// of several agents a cancel of ctx (SIGTERM, SIGINT to this agent) is a
// leave: a view without this agent is agreed, everything it holds is
// handed over (leave), and only then is the run stopped as a clean stop
// is. A whole-crawl stop (clusterHost.Stop) and the crawl's end stop the
// run without a leave.
func (a *Agent) leaveFirst(ctx context.Context) (context.Context, context.CancelFunc) {
	if a.node == nil {
		return ctx, func() {}
	}
	inner, cancel := context.WithCancel(context.WithoutCancel(ctx))
	now := make(chan struct{})
	a.clusterHost.ho.leaveNow = now
	go func() {
		select {
		case <-ctx.Done():
			// This process's leave: resumeLeave, running on after a
			// SIGTERM at the end of waitCluster, does not take it for an
			// earlier process's (leave marks it leaving).
			a.clusterHost.ho.resumed.Do(func() {})
		case <-now: // a leave an earlier process began (resumeLeave)
		case <-inner.Done():
			return
		}
		err := a.leave()
		a.leaveErr.Store(&err)
		cancel()
	}()
	return inner, cancel
}

// resumeLeave starts, once the node is ready, what an earlier process left
// unfinished: its hand-offs as an old owner, and its leave (it was killed,
// or timed out, in the middle): the leave goes on as if SIGTERM had come.
func (a *Agent) resumeLeave() {
	a.clusterHost.putMovedAgain() // leavemoved.go
	a.clusterHost.resumeGiving()
	if a.node.IsLeaving() && a.clusterHost.ho.leaveNow != nil {
		a.clusterHost.ho.resumed.Do(func() {
			a.log.Info("cluster: resuming the leave an earlier process began")
			if a.progress != nil {
				fmt.Fprintf(a.progress, "petrel: agent %s resuming the leave an earlier process began\n", a.cfg.Cluster.Agent)
			}
			close(a.clusterHost.ho.leaveNow)
		})
	}
}

// leave takes this agent out of the view and hands everything over within
// --leave-timeout: the view without it (proposed by itself), then the
// hand-off of every slot it owned (ViewChanged, handOver) and the delivery
// of its outbox. It returns nil when there was nothing to leave (no view
// with this agent, the last agent, the crawl over).
func (a *Agent) leave() error {
	n, self := a.node, a.cfg.Cluster.Agent
	v := n.View()
	select {
	case <-n.Finished():
		return nil
	default:
	}
	resumed := n.IsLeaving() // begun by an earlier process
	if v == nil || !v.Has(self) && !resumed || v.Has(self) && len(v.Agents) < 2 || !a.clusterIn.Load() {
		return nil
	}
	timeout := a.cfg.Cluster.LeaveTimeout
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if a.progress != nil {
		fmt.Fprintf(a.progress, "petrel: agent %s leaving the crawl (--leave-timeout %s)\n", self, timeout)
	}
	a.log.Info("cluster: leaving the crawl", "view", v.String(), "resumed", resumed)
	if err := n.Leaving(); err != nil {
		return err
	}
	if err := n.WaitView(ctx, func(v *cluster.View) bool { return !v.Has(self) }); err != nil {
		a.log.Error("cluster: leave: no view without this agent", "err", err)
		return errLeaveTimeout
	}
	done := make(chan struct{})
	go func() { a.clusterHost.ho.busy.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return errLeaveTimeout
	}
	if err := a.moveAllRevisits(); err != nil { // clusterrevisits.go
		return fmt.Errorf("leave: revisit schedule: %w", err)
	}
	// The outbox is delivered; after a restart, the queues the frontier
	// restored go to their owners first, as their hosts resolve. Each
	// round waits for the outbox to change (an acknowledgement) or the
	// frontier to settle.
	for {
		changed, settled := n.OutboxChanged(), a.frontier.Settled()
		if !resumed || a.frontier.Idle() {
			if err := a.clusterHost.sealMoved(ctx); err != nil { // leavemoved.go
				return err
			}
			if err := n.Flush(); err != nil {
				return err
			}
			if b, _ := n.OutboxLen(); b == 0 {
				break
			}
		}
		select {
		case <-ctx.Done():
			return errLeaveTimeout
		case <-changed:
		case <-settled:
		}
	}
	if err := n.LeaveDone(); err != nil {
		return err
	}
	a.log.Info("cluster: left the crawl: everything handed over")
	a.left.Store(true)
	if a.progress != nil {
		fmt.Fprintf(a.progress, "petrel: agent %s left the crawl: everything handed over\n", self)
	}
	return nil
}
