package agent

import (
	"sync"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/frontier"
)

// Routing before the node starts. Opening the sieve after a crash replays
// the keys of the checkpoint's unfinished flush, and their new URLs go
// through the ReadyRouter before the cluster node exists: keeping them
// here because no view is known yet would make this agent schedule keys
// whose address another agent owns. So the router holds the view the last
// run saved from the start, and what it routes to another agent before the
// node starts is parked in memory and handed to the node by startCluster.
// The parked records are bounded by what the sieve replays (at most its
// two buffers of keys).

// earlyRoutes is the clusterRouter's part for the time before the node.
type earlyRoutes struct {
	saved  *cluster.View // the view of the last run (nil: none)
	mu     sync.Mutex
	parked []parkedRecord
	done   bool // the node has taken the parked records
}

type parkedRecord struct {
	to   frontier.Peer
	kind cluster.Kind
	rec  []byte
}

// route hands rec to the node, or parks it while there is no node; it
// reports an error only from the node.
func (r *clusterRouter) route(to frontier.Peer, kind cluster.Kind, rec []byte) error {
	if n := r.node.Load(); n != nil {
		return n.Route(string(to), kind, rec)
	}
	r.early.mu.Lock()
	defer r.early.mu.Unlock()
	if !r.early.done {
		r.early.parked = append(r.early.parked, parkedRecord{to: to, kind: kind, rec: append([]byte(nil), rec...)})
		return nil
	}
	return r.node.Load().Route(string(to), kind, rec)
}

// unpark gives the parked records to n, now the router's node.
func (r *clusterRouter) unpark(n *cluster.Node) error {
	r.early.mu.Lock()
	parked := r.early.parked
	r.early.parked, r.early.done = nil, true
	r.early.mu.Unlock()
	for _, p := range parked {
		if err := n.Route(string(p.to), p.kind, p.rec); err != nil {
			return err
		}
	}
	if len(parked) > 0 {
		r.a.log.Info("cluster: URLs routed before the node started sent", "records", len(parked))
	}
	return nil
}
