package agent

import "context"

// leaveCheckpoint is a leave's first step once the view without this
// agent is in force: the addresses it gives up are held (nothing more is
// dispatched to them) and, once no request to them is in flight, a
// checkpoint is taken, before anything is moved out or sent. A kill from
// then on makes the next start recover a frontier that holds every URL
// still queued here and no page fetched since; what was moved out after
// it is in the log of moved URLs (leavemoved.go). It counts the requests
// in flight again each time the frontier takes a task back. Past --leave-timeout
// it goes on without the checkpoint (logged).
func (h *clusterHost) leaveCheckpoint(ctx context.Context) {
	a := h.a
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Cluster.LeaveTimeout)
	defer cancel()
	for {
		released := a.frontier.Released()
		inFlight, err := a.frontier.HoldGivenUp(ctx)
		if err != nil {
			a.log.Warn("cluster: leave: hold the addresses given up", "err", err)
			return
		}
		if inFlight == 0 {
			break
		}
		select {
		case <-ctx.Done():
			a.log.Warn("cluster: leave: requests still in flight, no checkpoint before the queues move", "in_flight", inFlight)
			return
		case <-released:
		}
	}
	a.crash.reach("leave-checkpoint")
	if err := a.Checkpoint(ctx); err != nil {
		a.log.Warn("cluster: leave: checkpoint before the queues move", "err", err)
	}
}
