package agent

import (
	"context"
	"time"
)

// DropHolds ends the holds of the addresses moved to this agent at epoch,
// whose view the crawl never agreed: no release of that epoch comes
// (cluster.HoldDropHost). Holds of other epochs stay.
func (h *clusterHost) DropHolds(epoch uint64) {
	ended := h.takeHolds(func(_ string, hd addrHold) bool { return hd.epoch == epoch })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, hd := range ended {
		if err := h.a.frontier.ReleaseAddrs(ctx, hd.id, nil); err != nil {
			h.a.log.Error("cluster: end the holds of a view never agreed", "epoch", epoch, "err", err)
		}
	}
	if len(ended) > 0 {
		h.a.log.Info("cluster: holds of a view never agreed ended", "epoch", epoch, "holds", len(ended))
	}
}
