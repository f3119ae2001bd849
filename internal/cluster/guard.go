package cluster

import (
	"context"
	"sync"
	"time"
)

// Guard keeps an agent that may have been cut off from the crawl from
// fetching: no split brain. It is open only while the agent's etcd lease
// is certainly live by its own clock (live, the lease's fence) and the
// agent holds a view that includes it, read back from etcd at or after
// its registration; it closes when the fence passes, when the lease is
// lost, or when a view without the agent is in force. A closed guard is
// latched: it opens again only when the node has checked those
// conditions afresh (open).
//
// While closed, no request starts (Allowed is false) and requests in
// flight are cut (their Context ends). Allowed reads the fence itself, so
// a process resumed after a long stop refuses before any of its
// goroutines has noticed. The zero Guard is not usable.
type Guard struct {
	now  func() time.Time
	live func(time.Time) bool // the lease's fence

	mu      sync.Mutex
	closed  bool
	reason  string
	period  context.Context // ends when the guard closes; a new one when it opens
	end     context.CancelFunc
	opened  chan struct{} // closed when the guard opens; replaced when it closes
	onClose func(reason string)
	// Contexts handed out by Context in this period, by parent (at most
	// maxShared): a fetcher's requests share one instead of deriving two
	// per request.
	shared    map[context.Context]context.Context
	sharedFor context.Context // the period they end with
}

// maxShared bounds the contexts Context keeps per period.
const maxShared = 256

// newGuard returns an open guard. now is the clock (time.Now in an agent,
// a fake one in tests); live reports whether the lease is certainly live
// at a time; onClose (may be nil) is called once per closing, outside the
// guard's lock.
func newGuard(now func() time.Time, live func(time.Time) bool, onClose func(string)) *Guard {
	g := &Guard{now: now, live: live, onClose: onClose, opened: make(chan struct{})}
	close(g.opened)
	g.period, g.end = context.WithCancel(context.Background())
	return g
}

// Allowed reports whether a request may start now.
func (g *Guard) Allowed() bool {
	if !g.live(g.now()) {
		g.Close(fenceClosed)
	}
	return !g.isClosed()
}

// fenceClosed is the reason of a guard closed by its lease's fence.
const fenceClosed = "the agent's lease is not known to be live (coordinators unreachable)"

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
	g.closed, g.reason = true, reason
	g.end()
	g.opened = make(chan struct{})
	g.mu.Unlock()
	if g.onClose != nil {
		g.onClose(reason)
	}
}

// open opens a closed guard.
func (g *Guard) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		return
	}
	g.closed, g.reason = false, ""
	g.period, g.end = context.WithCancel(context.Background())
	close(g.opened)
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

// Guard returns the node's guard: a fetcher asks its Allowed before each
// request and runs the request under its Context.
func (n *Node) Guard() *Guard { return n.guard }
