package cluster

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Guard keeps an agent that may have been cut off from the crawl from
// fetching: no split brain. It closes when the agent has completed no
// gossip round (a probe of another member answered) for Limit — half the
// grace period G after which the others take its keys over — or when the
// agent learns that the crawl declared it dead (a view without it). It
// stays closed until the agent is confirmed a member of the current view
// again (see death.go): a closed guard is latched, so a round completing
// after a long silence (a kill -STOP and -CONT) closes it rather than
// hiding the silence.
//
// While closed, no request starts (Allowed is false) and requests in
// flight are cut (Closing is closed). Allowed reads the clock itself, so a
// process resumed after a long stop refuses before any of its goroutines
// has had a chance to refresh the round's time. The zero Guard is not
// usable; an agent alone in its view is never guarded (active false).
type Guard struct {
	now    func() time.Time
	limit  time.Duration
	active func() bool  // the view has other agents
	last   atomic.Int64 // unix nanoseconds of the last completed round

	mu       sync.Mutex
	closed   bool
	reason   string
	closedAt int64           // unix nanoseconds
	period   context.Context // ends when the guard closes; a new one when it opens
	end      context.CancelFunc
	opened   chan struct{} // closed when the guard opens; replaced when it closes
	onClose  func(reason string)
	// Contexts handed out by Context in this period, by parent (at most
	// maxShared): a fetcher's requests share one instead of deriving two
	// per request.
	shared    map[context.Context]context.Context
	sharedFor context.Context // the period they end with
}

// maxShared bounds the contexts Context keeps per period.
const maxShared = 256

// newGuard returns an open guard whose last round is now. now is the
// clock (time.Now in an agent, a fake one in tests); active reports
// whether there are others whose rounds count; onClose (may be nil) is
// called once per closing, outside the guard's lock.
func newGuard(limit time.Duration, now func() time.Time, active func() bool, onClose func(string)) *Guard {
	g := &Guard{now: now, limit: limit, active: active, onClose: onClose, opened: make(chan struct{})}
	close(g.opened)
	g.period, g.end = context.WithCancel(context.Background())
	g.last.Store(now().UnixNano())
	return g
}

// Round records a completed gossip round. After a silence longer than
// Limit the guard closes first: the silence happened, whatever follows.
func (g *Guard) Round() {
	t := g.now().UnixNano()
	prev := g.last.Swap(t)
	if time.Duration(t-prev) > g.limit && g.active() {
		g.Close("no gossip round completed for " + time.Duration(t-prev).Round(time.Millisecond).String())
	}
}

// Allowed reports whether a request may start now.
func (g *Guard) Allowed() bool {
	if !g.active() {
		return !g.isClosed()
	}
	if d := time.Duration(g.now().UnixNano() - g.last.Load()); d > g.limit {
		g.Close("no gossip round completed for " + d.Round(time.Millisecond).String())
	}
	return !g.isClosed()
}

func (g *Guard) isClosed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// Reason says why the guard is closed ("" when open).
func (g *Guard) Reason() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reason
}

// Close closes the guard (a no-op when closed already).
func (g *Guard) Close(reason string) {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed, g.reason, g.closedAt = true, reason, g.now().UnixNano()
	g.end()
	g.opened = make(chan struct{})
	g.mu.Unlock()
	if g.onClose != nil {
		g.onClose(reason)
	}
}

// open opens a closed guard and counts the rounds afresh from now.
func (g *Guard) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		return
	}
	g.last.Store(g.now().UnixNano())
	g.closed, g.reason = false, ""
	g.period, g.end = context.WithCancel(context.Background())
	close(g.opened)
}

// roundSinceClose reports whether a gossip round completed after the
// guard closed: gossip works again.
func (g *Guard) roundSinceClose() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last.Load() > g.closedAt
}

// Closing returns a channel closed when the guard closes (already closed
// if it is closed now).
func (g *Guard) Closing() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.period.Done()
}

// WaitOpen blocks while the guard is closed, until ctx ends.
func (g *Guard) WaitOpen(ctx context.Context) error {
	g.mu.Lock()
	ch := g.opened
	g.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Context returns a context derived from parent that also ends when the
// guard closes: a request in flight is cut then. Call cancel when the
// request is over.
//
// The context is shared by the calls with the same parent in one period
// of the guard (cancel does nothing then): it ends with the parent or the
// period, and holds nothing of a request's.
func (g *Guard) Context(parent context.Context) (context.Context, context.CancelFunc) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sharedFor != g.period {
		g.shared, g.sharedFor = map[context.Context]context.Context{}, g.period
	}
	if ctx, ok := g.shared[parent]; ok && ctx.Err() == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(parent)
	stop := context.AfterFunc(g.period, cancel)
	if len(g.shared) < maxShared || g.dropEnded() {
		g.shared[parent] = ctx
		return ctx, func() {}
	}
	return ctx, func() { stop(); cancel() }
}

// dropEnded forgets the shared contexts that ended, and reports whether
// there is room for another.
func (g *Guard) dropEnded() bool {
	for p, ctx := range g.shared {
		if ctx.Err() != nil {
			delete(g.shared, p)
		}
	}
	return len(g.shared) < maxShared
}
