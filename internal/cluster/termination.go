package cluster

import (
	"context"
	"encoding/json"
	"slices"
	"time"
)

// Termination detection, by waves of status calls (Mattern's
// double-counting idea, with the exchange's own acknowledgements as the
// channel counts). An agent is idle when its frontier is idle, no record
// waits in a batch buffer, its outbox is empty (every batch it ever made
// was acknowledged, i.e. is durable in its receiver's inbox) and its inbox
// is fully applied. Its activity counter grows with every batch it makes
// or applies. The detector — the alive member of the view with the
// smallest name — asks every member for (incarnation, activity, idle) in
// waves. When two consecutive waves find every member of the view alive
// and idle with unchanged counters, the crawl is over: an idle agent
// becomes busy only by applying a batch, which changes its counter, so
// every agent was idle throughout the interval between its two answers;
// those intervals share the instant between the waves, at which no batch
// was unacknowledged or unapplied anywhere. A suspect or dead member, or
// one missing from the answers, restarts the count — suspect as the
// detector's own membership sees it (heard.go: its probe of the member
// unanswered, not refuted yet): work held only by an
// absent agent keeps the crawl open, and so does an agent taken out of the
// view by a death and not forgotten (View.Absent).
//
// The end is not decided while a view change is under way (decideEnd).
// The detector then writes state/FINISHED, gossips it, and tells every
// member over the exchange; each one does the same. An agent asking to
// join a crawl already over is told so (serveJoin answers 410) and ends.

type waveEntry struct {
	Incarnation uint64
	Activity    uint64
	Idle        bool
}

func (n *Node) terminationLoop(ctx context.Context) {
	select {
	case <-n.ready:
	case <-ctx.Done():
		return
	}
	t := time.NewTicker(max(n.cfg.Timing.probe(), 20*time.Millisecond))
	defer t.Stop()
	var prev map[string]waveEntry
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.finished:
			return
		case <-t.C:
		}
		v := n.View()
		// An absent agent (death.go) may hold work nobody else has. A
		// detector whose zombie guard is closed may hold a view the crawl
		// never agreed (viewadopt.go): it detects nothing.
		if v == nil || v.Epoch <= 1 && len(v.Agents) < n.cfg.Wait || len(v.Absent) > 0 || !n.isDetector(v) || !n.guard.Allowed() || n.members.anySuspect() {
			prev = nil
			continue
		}
		cur := n.wave(ctx, v)
		if cur == nil {
			prev = nil
			continue
		}
		if prev != nil && mapsEqual(prev, cur) {
			if !n.decideEnd(v) {
				prev = nil
				continue
			}
			body, _ := json.Marshal(map[string]string{"by": n.cfg.Name})
			for _, m := range n.aliveMembers() {
				if m.Name != n.cfg.Name && m.Meta.Exchange != "" {
					// Not cut by the agent's own exit on Finished: Close
					// waits for these calls.
					cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					n.client.post(cctx, m.Meta.Exchange, "/v1/finish", body)
					cancel()
				}
			}
			return
		}
		prev = cur
	}
}

// decideEnd ends the crawl whose last two waves agreed at view v, unless
// a view change is under way: one this agent proposes (a join being
// granted, whose agent would get the view after the others ended and
// exited, and wait for them for ever), one it promised, or one installed
// since the wave began. It holds the proposal lock while it decides, and
// ProposeView refuses a view after the end (serveJoin then answers 410,
// and the joining agent ends too).
func (n *Node) decideEnd(v *View) bool {
	if !n.vc.proposeMu.TryLock() {
		return false
	}
	defer n.vc.proposeMu.Unlock()
	if n.viewEpoch() != v.Epoch || n.promisedEpoch() != 0 {
		return false
	}
	n.finish("termination detected by " + n.cfg.Name)
	return true
}

// isDetector reports whether this agent is the alive member of v with the
// smallest name.
func (n *Node) isDetector(v *View) bool {
	alive := map[string]bool{n.cfg.Name: true}
	for _, m := range n.aliveMembers() {
		alive[m.Name] = true
	}
	for _, name := range v.Names() {
		if alive[name] {
			return name == n.cfg.Name
		}
	}
	return false
}

// wave asks every member of v for its counters; nil unless all of them
// answered, are alive (not suspect) and idle.
func (n *Node) wave(ctx context.Context, v *View) map[string]waveEntry {
	members := map[string]Member{}
	for _, m := range n.members.members() {
		members[m.Name] = m
	}
	out := map[string]waveEntry{}
	for _, name := range v.Names() {
		var s *Status
		if name == n.cfg.Name {
			s = n.Status()
		} else {
			m, ok := members[name]
			if !ok || m.State != "alive" {
				return nil
			}
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			var err error
			s, err = n.client.GetStatus(cctx, m.Meta.Exchange)
			cancel()
			if err != nil {
				return nil
			}
		}
		if !s.Idle || s.ViewEpoch != v.Epoch {
			return nil
		}
		out[name] = waveEntry{s.Incarnation, s.Activity, s.Idle}
	}
	if n.members.anySuspect() { // a suspicion that began during the wave
		return nil
	}
	return out
}

func mapsEqual(a, b map[string]waveEntry) bool {
	if len(a) != len(b) {
		return false
	}
	ka := make([]string, 0, len(a))
	for k := range a {
		ka = append(ka, k)
	}
	slices.Sort(ka)
	for _, k := range ka {
		if bv, ok := b[k]; !ok || bv != a[k] {
			return false
		}
	}
	return true
}
