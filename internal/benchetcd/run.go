package benchetcd

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/errgroup"

	"github.com/petrel-crawler/petrel/internal/coord"
)

// crawlName is the simulated crawl's name (its keys' prefix).
const crawlName = "bench"

// run is one simulation: its options, its target and what all agents
// count together.
type run struct {
	o      Options
	t      Target
	crawl  string
	counts counts
	views  viewWrites
}

// window is what was read at the measured window's two ends.
type window struct {
	start, end     time.Time
	cpu0, cpu1     time.Duration // the coordinator's
	wait0, wait1   time.Duration // the coordinator's threads' waits for a CPU
	swait0, swait1 time.Duration // this process's
	self0, self1   time.Duration // this process's: the simulated agents'
	st0, st1       *clientv3.StatusResponse
	c0, c1         Counts
	load0, load1   string
	rss, peak      int64
	leavesAsked    int
}

// Run simulates o.Agents agents against t: it starts them, waits for the
// first view to hold them all, measures a window of o.Duration with a
// leave and return every o.ViewEvery, and gives views written in the
// window up to o.Grace to reach every agent.
func Run(ctx context.Context, o Options, t Target) (Result, error) {
	o = o.Defaults()
	if err := o.check(); err != nil {
		return Result{}, err
	}
	r := &run{o: o, t: t, crawl: crawlName, views: viewWrites{key: coord.Prefix(crawlName) + "view", at: map[int64]viewWrite{}}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	began := time.Now()
	agents, err := r.startAgents(ctx)
	if err != nil {
		return Result{}, err
	}
	if err := r.firstView(ctx, agents); err != nil {
		return Result{}, err
	}
	o.Log(fmt.Sprintf("%d agents registered and in the first view in %.1f s", len(agents), time.Since(began).Seconds()))
	for _, a := range agents {
		go a.run(ctx)
	}
	w, err := r.measure(ctx, agents)
	if err != nil {
		return Result{}, err
	}
	r.grace(ctx, agents, w)
	cancel()
	return r.result(w, agents), nil
}

// startAgents starts every agent, 16 at a time.
func (r *run) startAgents(ctx context.Context) ([]*agent, error) {
	setup, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	agents := make([]*agent, r.o.Agents)
	g, gctx := errgroup.WithContext(setup)
	g.SetLimit(16)
	for i := range agents {
		a := &agent{i: i, r: r, rng: rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano()))), leave: make(chan struct{}, 1)}
		agents[i] = a
		g.Go(func() error {
			if err := a.start(ctx, gctx); err != nil {
				return fmt.Errorf("benchetcd: agent %d: %w", i, err)
			}
			return nil
		})
	}
	return agents, g.Wait()
}

// firstView waits until every agent has read a view of all of them.
func (r *run) firstView(ctx context.Context, agents []*agent) error {
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, a := range agents {
		if err := a.waitView(wctx, func(v coord.View) bool { return len(v.Members) == len(agents) }); err != nil {
			return fmt.Errorf("benchetcd: %s never read a first view of all %d agents: %w", a.name, len(agents), err)
		}
	}
	return nil
}

// measure runs the window: figures read at both ends, a leave and
// return asked of the agents 1, 2, … in turn at ViewEvery/2 and then
// every ViewEvery.
func (r *run) measure(ctx context.Context, agents []*agent) (window, error) {
	var w window
	var err error
	if w.st0, err = agents[0].cli.Status(ctx, r.t.Endpoints[0]); err != nil {
		return w, err
	}
	w.cpu0, w.self0, w.c0, w.load0 = r.coordinatorCPU(), selfCPU(), r.counts.snapshot(), loadAverage()
	w.wait0, w.swait0 = r.waits()
	w.start = time.Now()
	end := time.NewTimer(r.o.Duration)
	defer end.Stop()
	next := time.NewTimer(r.o.ViewEvery / 2)
	defer next.Stop()
	k := 0
loop:
	for {
		select {
		case <-ctx.Done():
			return w, context.Cause(ctx)
		case <-end.C:
			break loop
		case <-next.C:
			select {
			case agents[1+k%(len(agents)-1)].leave <- struct{}{}:
				w.leavesAsked++
			default:
			}
			k++
			next.Reset(r.o.ViewEvery)
		}
	}
	w.end = time.Now()
	w.cpu1, w.self1, w.c1, w.load1 = r.coordinatorCPU(), selfCPU(), r.counts.snapshot(), loadAverage()
	w.wait1, w.swait1 = r.waits()
	if w.st1, err = agents[0].cli.Status(ctx, r.t.Endpoints[0]); err != nil {
		return w, err
	}
	if r.t.PID != 0 {
		w.rss, w.peak, _ = procMemory(r.t.PID)
	}
	return w, nil
}

func (r *run) coordinatorCPU() time.Duration {
	if r.t.PID == 0 {
		return 0
	}
	d, err := procCPU(r.t.PID)
	if err != nil {
		r.o.Log("coordinator CPU: " + err.Error())
	}
	return d
}

// waits returns how long the coordinator's threads and this process's
// have waited for a CPU (zero where not known).
func (r *run) waits() (coordinator, self time.Duration) {
	if r.t.PID != 0 {
		coordinator, _ = procWait(r.t.PID)
	}
	self, _ = procWait(os.Getpid())
	return coordinator, self
}

// grace waits, up to Grace, until every agent has read the newest view
// written in the window.
func (r *run) grace(ctx context.Context, agents []*agent, w window) {
	var newest int64
	views, _ := r.views.between(w.start, w.end)
	for rev := range views {
		newest = max(newest, rev)
	}
	gctx, cancel := context.WithTimeout(ctx, r.o.Grace)
	defer cancel()
	for _, a := range agents {
		a.waitView(gctx, func(v coord.View) bool { return v.Rev >= newest })
	}
}
