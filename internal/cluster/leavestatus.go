package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"
)

// A leaving agent's last figures. A leave killed and never started again
// is forgotten by an operator (leftforget.go), and what the forget gives
// up is what the agent held at its last status the coordinator had. The
// coordinator's poll (pollStatuses) may predate the leave's moving of the
// queues into the outbox, so the leaving agent reports its status to
// every alive member once its queues are moved out and before its
// releases (ReportLeaving): from then on it only sends what it holds, so
// the figures bound what a kill gives up.

// ReportLeaving sends this agent's status to every alive member (best
// effort, within two seconds); each keeps it as its last status of this
// agent.
func (n *Node) ReportLeaving(ctx context.Context) {
	s := n.Status()
	s.Members = nil
	body, _ := json.Marshal(s)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, m := range n.aliveMembers() {
		if m.Name == n.cfg.Name || m.Meta.Exchange == "" {
			continue
		}
		wg.Add(1)
		go func(addr string) {
			defer wg.Done()
			n.client.post(ctx, addr, "/v1/status/leaving", body)
		}(m.Meta.Exchange)
	}
	wg.Wait()
}

// serveLeavingStatus is POST /v1/status/leaving: a leaving agent's status.
func (n *Node) serveLeavingStatus(w http.ResponseWriter, r *http.Request) {
	var s Status
	if !readControl(w, r, &s, "leaving agent's status", func() error {
		if !ValidName(s.Name) || !s.Leaving {
			return errors.New("not the status of a leaving agent")
		}
		return nil
	}) {
		return
	}
	n.last.put(&s)
	w.WriteHeader(http.StatusOK)
}
