package cluster

import (
	"context"
	"fmt"
	"time"
)

// A deliberate leave. The agent marks its record leaving (published
// under its lease); the crawl's writer of views then writes a view
// without it, and the agent hands over what it owned (handoff.go), then
// revokes its lease.

// Leaving marks this agent as leaving the crawl deliberately and asks
// for a view without it: its guard then does not cut
// its requests in flight when that view is in force (they end, and its
// releases wait for them). The mark is saved (awaiting.json) until
// LeaveDone: a start after a crash or a timeout in the middle of the
// leave resumes it (IsLeaving) instead of asking to join again.
func (n *Node) Leaving() error {
	n.leaving.Store(true)
	err := n.setLeaving(true)
	n.nudgePublish()
	return err
}

// IsLeaving reports whether this agent is leaving: Leaving was called in
// this process, or in an earlier one whose leave did not finish.
func (n *Node) IsLeaving() bool { return n.leaving.Load() }

// leftView reports whether this agent is leaving and its view no longer
// has it: it owns no key, and forwards to their owners the URLs it is
// given (a start that resumes the leave replays its inbox from its
// checkpoint, with its zombie guard closed until a view with it, which
// does not come).
func (n *Node) leftView() bool {
	if !n.leaving.Load() {
		return false
	}
	v := n.View()
	return v != nil && !v.Has(n.cfg.Name)
}

// LeaveDone records that the leave is finished: everything handed over.
// A later start on this directory asks to join the crawl again.
// The crawl learns it from this agent's kept record (Done), so that its
// lease's end is not taken for a death in the middle of the leave.
func (n *Node) LeaveDone() error {
	if err := n.setLeaving(false); err != nil {
		return err
	}
	n.leaveDone.Store(true)
	ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
	defer cancel()
	if err := n.keepFigures(ctx); err != nil {
		return fmt.Errorf("cluster: record the leave's end: %w", err)
	}
	return nil
}

func (n *Node) setLeaving(on bool) error {
	n.ho.mu.Lock()
	defer n.ho.mu.Unlock()
	n.ho.st.Leaving = on
	return n.ho.saveLocked(n.cfg.Dir)
}

// ReportLeaving keeps this agent's figures now, without a lease, and
// returns once etcd has them: if the leave is killed from here on and
// never started again, a forget gives up what they say.
func (n *Node) ReportLeaving(ctx context.Context) {
	if err := n.keepFigures(ctx); err != nil {
		n.log.Warn("cluster: keep the leave's figures", "err", err)
	}
	n.nudgePublish()
}

// keepFigures keeps this agent's record and figures in etcd without a
// lease (PublishLast), once connected: what a forget of it gives up.
func (n *Node) keepFigures(ctx context.Context) error {
	_, crawl := n.crawlState()
	if crawl == nil {
		return nil
	}
	return crawl.PublishLast(ctx, n.record(n.figures(0)))
}

// WaitView blocks until this agent holds a view for which ok is true
// (for a leave: a view without this agent, which the crawl's writer of
// views writes in answer to Leaving), or ctx ends.
func (n *Node) WaitView(ctx context.Context, ok func(*View) bool) error {
	for {
		installed := n.vc.installed.Wait()
		if v := n.View(); v != nil && ok(v) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-installed:
		}
	}
}
