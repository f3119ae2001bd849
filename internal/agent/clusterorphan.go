package agent

import (
	"context"
	"slices"
	"time"
)

// DropHolds ends the holds of the addresses moved to this agent at epoch,
// whose view the crawl never agreed: no release of that epoch comes
// (cluster.HoldDropHost). Holds of other epochs stay.
func (h *clusterHost) DropHolds(epoch uint64) {
	h.ho.mu.Lock()
	var ended []addrHold
	for from, hs := range h.ho.holds {
		h.ho.holds[from] = slices.DeleteFunc(hs, func(hd addrHold) bool {
			if hd.epoch == epoch {
				ended = append(ended, hd)
				return true
			}
			return false
		})
	}
	h.ho.mu.Unlock()
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
