package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/frontier"
)

// clusterGrace returns how long after an agent's lease expired its keys
// move: the longest request it may have begun before its fence closed
// (--fetch-timeout) plus the largest delay its keys or addresses may owe;
// --cluster-grace when given, refused below that bound.
func clusterGrace(cfg Config) (time.Duration, error) {
	f := cfg.Frontier
	bound := cfg.Fetch.Timeout + max(f.HostDelay, f.IPDelay, f.MaxDelay, f.CrawlDelayCap)
	switch g := cfg.Cluster.Grace; {
	case g == 0:
		return bound, nil
	case g < bound:
		return 0, fmt.Errorf("--cluster-grace %s is below the smallest safe value %s (--fetch-timeout %s + the largest delay)", g, bound, cfg.Fetch.Timeout)
	default:
		return g, nil
	}
}

// fetchGuard returns the zombie guard a fetcher obeys (nil for an agent
// crawling alone).
func (a *Agent) fetchGuard() *cluster.Guard {
	if n := a.clusterNode.Load(); n != nil {
		return n.Guard()
	}
	return nil
}

// guardedFetch reports whether the fetcher may begin t: when the zombie
// guard is closed, t goes back to its queue and the fetcher waits until the
// guard opens (or stop ends). ctx is then the fetch's context, cut when the
// guard closes; call done after the fetch.
func (a *Agent) guardedFetch(stop, ctx context.Context, t *frontier.Task) (fctx context.Context, done func(), ok bool) {
	g := a.fetchGuard()
	if g == nil {
		return ctx, func() {}, true
	}
	if !g.Allowed() {
		a.stats.ZombieRefused.Add(1)
		a.frontier.Done(frontier.Outcome{Task: t, Result: frontier.Abandoned, End: time.Now()})
		g.WaitOpen(stop)
		return nil, nil, false
	}
	fctx, done = g.Context(ctx)
	return fctx, done, true
}

// guardCut reports whether the zombie guard cut a fetch that returned
// err, its context fctx (from guardedFetch): the fetch failed, and the
// guard closed during it or is closed at its end. A fetch in flight when
// the process was stopped (SIGSTOP) ends at its resumption as a timeout
// (its deadline passed while it was stopped) as often as it is cut: both
// are the guard's, for the server may have answered, and neither counts
// as a failure of the host. A complete response is kept whatever the guard
// did meanwhile: the request was begun while it was open, and its answer
// is in.
func (a *Agent) guardCut(fctx context.Context, err error) bool {
	g := a.fetchGuard()
	return g != nil && err != nil && (fctx.Err() != nil || !g.Allowed())
}

// noteGuardCut logs a page fetch that the zombie guard cut in flight (its
// URL goes back to its queue): the server may have answered it, so it is
// a request made twice, which the death tests count in their bound.
func (a *Agent) noteGuardCut(t *frontier.Task) {
	if g := a.fetchGuard(); g != nil && !t.Robots && !g.Allowed() {
		a.stats.ZombieCut.Add(1)
		a.log.Info("cluster: zombie guard cut a fetch in flight: its URL goes back to its queue", "url", t.URL())
	}
}
