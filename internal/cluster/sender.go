package cluster

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"
)

// The senders deliver the outbox through the node's Transport: one
// goroutine per destination holding batches, with at most Window batches
// in flight to it. A batch leaves the outbox only when its receiver
// acknowledged it (durable there), or when its records were routed again
// after a refusal for its view (fence.go). Back-pressure (503: inbox
// full, receiver stopping) or a network error waits and tries again, with
// a backoff capped at a few seconds: a slow or absent owner slows its
// senders, and nothing is dropped.

func (n *Node) senderLoop(ctx context.Context) {
	n.fence.wake = make(chan struct{}, 1)
	n.wg.Go(func() { n.rerouteLoop(ctx) })
	running := map[string]bool{}
	var mu sync.Mutex
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		for _, d := range n.outbox.Dests() {
			mu.Lock()
			if !running[d] {
				running[d] = true
				n.wg.Go(func() {
					n.sendTo(ctx, d)
					mu.Lock()
					delete(running, d)
					mu.Unlock()
				})
			}
			mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-n.outbox.Changed():
		case <-t.C:
		}
	}
}

// sendTo delivers dest's batches until none is left.
func (n *Node) sendTo(ctx context.Context, dest string) {
	var mu sync.Mutex
	inFlight := map[BatchID]bool{}
	done := make(chan error, n.cfg.Window)
	backoff := 10 * time.Millisecond
	for ctx.Err() == nil {
		mu.Lock()
		free := n.cfg.Window - len(inFlight)
		mu.Unlock()
		var batch []OutEntry
		if free > 0 {
			batch = n.outbox.Pending(dest, free, func(id BatchID) bool {
				mu.Lock()
				defer mu.Unlock()
				return inFlight[id] || n.fence.refused.has(dest, id)
			})
		}
		mu.Lock()
		idle := len(batch) == 0 && len(inFlight) == 0
		mu.Unlock()
		if idle {
			return
		}
		addr := n.exchangeOf(dest)
		if v := n.View(); addr == "" {
			batch = nil // not alive now: wait for it, or for death.go's re-routing
		} else if v != nil && !v.Has(dest) {
			batch = n.leftResend(dest, v, batch) // death.go
		}
		for _, e := range batch {
			mu.Lock()
			inFlight[e.ID] = true
			mu.Unlock()
			n.tried.put(dest, e.ID, struct{}{}) // perhaps delivered from now on (death.go)
			go func(e OutEntry) {
				err := n.sendOne(ctx, Peer{Name: dest, Addr: addr}, e)
				if err != nil {
					n.counts.sendErrors.Add(1)
					var se *StatusError
					if errors.As(err, &se) {
						n.tried.drop(dest, e.ID) // refused: not in the receiver's inbox
					}
					switch {
					case se != nil && se.Code == http.StatusConflict:
						n.noteRefused(e, se.View) // fence.go; the receiver logs it
					case se == nil || se.Code != http.StatusServiceUnavailable:
						n.log.Warn("cluster: send", "dest", dest, "batch", e.ID.String(), "err", err)
					}
				}
				mu.Lock() // after noteRefused: a refused batch is never offered again
				delete(inFlight, e.ID)
				mu.Unlock()
				done <- err
			}(e)
		}
		wait := backoff
		if len(batch) > 0 {
			wait = time.Hour
		}
		select {
		case <-ctx.Done():
			return
		case err := <-done:
			if err == nil {
				backoff = 10 * time.Millisecond
				continue
			}
			select { // the receiver is failing: do not spin
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 3*time.Second)
		case <-time.After(wait):
			backoff = min(2*backoff, 3*time.Second)
		}
	}
}

func (n *Node) sendOne(ctx context.Context, to Peer, e OutEntry) error {
	wire, err := n.outbox.Read(e)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := n.tr.SendBatch(cctx, to, wire); err != nil {
		if se, ok := isStatus(err, http.StatusServiceUnavailable); ok {
			select {
			case <-ctx.Done():
			case <-time.After(min(max(se.RetryAfter, 50*time.Millisecond), time.Second)):
			}
		}
		return err
	}
	n.tried.drop(e.Dest, e.ID)
	return n.outbox.Ack(e)
}

// rerouteLoop routes again, until ctx ends, the outbox's batches that
// must go to other agents: those for agents out of the view (death.go)
// and those refused for an older view (fence.go). One goroutine does
// both, so no batch's records are routed twice by two rounds at once. It
// starts once a view read from etcd was offered to installView (the view
// saved by the last run may be older than the crawl's: an agent absent
// there may be back), then runs when a view is installed, when a batch
// is refused, at once while batches for agents out of the view remain,
// and every publishEvery: a leaver's batches wait until --cluster-grace
// after it was last seen alive (death.go).
func (n *Node) rerouteLoop(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-n.vc.offered:
	}
	t := time.NewTicker(publishEvery)
	defer t.Stop()
	for {
		installed := n.vc.installed.Wait()
		var again, retry <-chan time.Time
		more, err1 := n.rerouteOutbox(ctx, n.View())
		err := errors.Join(err1, n.rerouteRefused(ctx))
		switch {
		case err != nil && ctx.Err() == nil:
			n.log.Error("cluster: route the outbox's batches again", "err", err)
			retry = time.After(time.Second)
		case more:
			again = time.After(0)
		}
		select {
		case <-ctx.Done():
			return
		case <-n.fence.wake:
		case <-installed:
		case <-t.C:
		case <-again:
		case <-retry:
		}
	}
}
