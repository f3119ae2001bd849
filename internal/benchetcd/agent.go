package benchetcd

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/petrel-crawler/petrel/internal/coord"
)

// agent is one simulated agent: its own client, lease, record and watch.
// Its loop (run) publishes its figures and, when asked on leave, leaves
// the view and comes back under a new name.
type agent struct {
	i     int
	r     *run
	cli   *clientv3.Client
	crawl *coord.Crawl
	rng   *rand.Rand
	leave chan struct{} // a request to leave and return; buffered 1

	// Owned by the loop.
	gen       int
	regRev    int64 // the first registration's revision: the watch starts there
	name      string
	lease     *coord.Lease
	stopLease context.CancelFunc
	fig       coord.Figures

	mu       sync.Mutex
	view     coord.View
	changed  chan struct{} // closed and replaced when view changes
	seen     []seenView    // every view revision read, in order
	pubs     []sample      // every Publish's latency
	pubErrs  int
	lost     []time.Time // when leases were lost (expired in etcd) while running
	cycles   int         // leaves and returns completed
	cycleErr error
}

type seenView struct {
	rev int64
	at  time.Time
}

type sample struct {
	at time.Time
	d  time.Duration
}

func agentName(i, gen int) string { return fmt.Sprintf("a%04d-%d", i, gen) }

// start dials, takes a lease, registers, and starts the watch (and, for
// the first agent, the view writer). Its goroutines end with ctx.
func (a *agent) start(ctx, setup context.Context) error {
	cert, err := a.r.t.Authority.Issue(agentName(a.i, 0), nil)
	if err != nil {
		return err
	}
	cli, err := coord.Dial(setup, a.r.t.Endpoints, a.r.t.Authority.ClientTLS(cert))
	if err != nil {
		return err
	}
	context.AfterFunc(ctx, func() { cli.Close() })
	instrument(cli, &a.r.counts, &a.r.views)
	a.cli, a.crawl = cli, coord.NewCrawl(cli, a.r.crawl)
	a.changed = make(chan struct{})
	if err := a.join(ctx, setup); err != nil {
		return err
	}
	go a.watch(ctx, a.regRev)
	if a.i == 0 {
		p := coord.Policy{Wait: a.r.o.Agents, DeathDelay: 2 * a.r.o.TTL, Settle: a.r.o.Settle}
		go func() {
			if err := a.crawl.Lead(ctx, a.lease, a.name, p, func(string, ...any) {}); err != nil && ctx.Err() == nil {
				a.r.o.Log("the view writer stopped: " + err.Error())
			}
		}()
	}
	return nil
}

// join takes a new lease and registers under the agent's next name.
func (a *agent) join(ctx, req context.Context) error {
	lctx, cancel := context.WithCancel(ctx)
	l, err := coord.GrantLease(lctx, a.cli, a.r.o.TTL)
	if err != nil {
		cancel()
		return err
	}
	name := agentName(a.i, a.gen)
	rev, err := a.crawl.Register(req, l, 0, a.record(name, false))
	if err != nil {
		cancel()
		return err
	}
	if a.regRev == 0 {
		a.regRev = rev
	}
	a.name, a.lease, a.stopLease = name, l, cancel
	return nil
}

func (a *agent) record(name string, leaving bool) coord.AgentRecord {
	return coord.AgentRecord{Name: name, Exchange: "127.0.0.1:7946", Weight: 1, Leaving: leaving}
}

// watch reads views, as an agent does (coord.FollowFrom from its first
// registration) or from the whole prefix (coord.Follow, as the writer of
// views does), and records when each revision was first read.
func (a *agent) watch(ctx context.Context, from int64) {
	states := a.crawl.FollowFrom(ctx, from)
	if a.r.o.Watch == WatchPrefix {
		states = a.crawl.Follow(ctx)
	}
	for st := range states {
		a.saw(st.View)
	}
}

func (a *agent) saw(v coord.View) {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if v.Rev == a.view.Rev {
		return
	}
	a.view = v
	a.seen = append(a.seen, seenView{rev: v.Rev, at: now})
	close(a.changed)
	a.changed = make(chan struct{})
}

// waitView waits until the view read satisfies ok.
func (a *agent) waitView(ctx context.Context, ok func(coord.View) bool) error {
	for {
		a.mu.Lock()
		v, ch := a.view, a.changed
		a.mu.Unlock()
		if ok(v) {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-ch:
		}
	}
}

// run publishes every PublishEvery ±20 % and leaves and returns when
// asked, until ctx ends.
func (a *agent) run(ctx context.Context) {
	every := a.r.o.PublishEvery
	t := time.NewTimer(time.Duration(a.rng.Int64N(int64(every))))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.lease.Lost():
			if ctx.Err() == nil {
				a.mu.Lock()
				a.lost = append(a.lost, time.Now())
				a.mu.Unlock()
				a.r.o.Log(a.name + ": lease lost: " + fmt.Sprint(a.lease.Err()))
			}
			return
		case <-a.leave:
			err := a.cycle(ctx)
			a.mu.Lock()
			if err != nil && ctx.Err() == nil {
				a.cycleErr = err
			} else if err == nil {
				a.cycles++
			}
			a.mu.Unlock()
		case <-t.C:
			a.publish(ctx, false)
			t.Reset(time.Duration(float64(every) * (0.8 + 0.4*a.rng.Float64())))
		}
	}
}

// publish changes the figures and publishes them.
func (a *agent) publish(ctx context.Context, leaving bool) {
	a.mu.Lock()
	a.fig.Epoch = a.view.Rev
	a.mu.Unlock()
	a.fig.Activity++
	a.fig.Fetched += a.rng.Int64N(200)
	a.fig.Queued = a.rng.Int64N(1 << 20)
	a.fig.Sent += uint64(a.rng.IntN(20))
	a.fig.Applied += uint64(a.rng.IntN(20))
	start := time.Now()
	err := a.crawl.PublishFigures(ctx, a.lease, a.name, a.fig)
	if leaving && err == nil {
		err = a.crawl.Publish(ctx, a.lease, a.record(a.name, true))
	}
	d := time.Since(start)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			a.pubErrs++
		}
		return
	}
	a.pubs = append(a.pubs, sample{at: start, d: d})
}

// cycle leaves the view (a publication with Leaving set, then its lease
// revoked once a view without it is read) and returns under a new name
// with a new lease, until a view with it is read.
func (a *agent) cycle(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	old := a.name
	a.publish(wctx, true)
	if err := a.waitView(wctx, func(v coord.View) bool { return v.Rev > 0 && !v.Has(old) }); err != nil {
		return fmt.Errorf("%s: no view without it: %w", old, err)
	}
	if err := a.lease.Revoke(wctx); err != nil {
		return fmt.Errorf("%s: revoke: %w", old, err)
	}
	a.stopLease()
	a.gen++
	if err := a.join(ctx, wctx); err != nil {
		return fmt.Errorf("%s: return: %w", agentName(a.i, a.gen), err)
	}
	if err := a.waitView(wctx, func(v coord.View) bool { return v.Has(a.name) }); err != nil {
		return fmt.Errorf("%s: no view with it: %w", a.name, err)
	}
	return nil
}
