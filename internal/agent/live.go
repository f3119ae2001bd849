package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
	"github.com/petrel-crawler/petrel/internal/filter"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// liveFile holds, in state/, the settings changed while the crawl ran
// (name → value, the JSON form), so that a restart keeps them.
const liveFile = "live-settings.json"

// live is what the crawl's goroutines read of the settings that can change
// while it runs. A value is never changed once published: the control loop
// publishes a new one (Agent.live), so fetchers and parsers read a
// consistent set without a lock.
type live struct {
	fetchers, parsers int
	maxLinks          int
	maxEmbedHops      int
	traps             filter.Traps
	scope             *filter.Scope
	filters           *filter.Stages // the five stages' filters
	timeout           time.Duration
	maxBody           int64
	stopGrace         time.Duration
}

// newLive builds the published settings from a configuration; the scope
// is built from the seeds.
func newLive(c *Config, seeds []urlx.URL) *live {
	sc := filter.NewScope(c.Filter.Scope)
	for _, s := range seeds {
		sc.AddSeed(s)
	}
	// The filters were checked with the settings (Config.Validate): an
	// error here leaves the stages empty rather than the crawl stopped.
	fs, _ := filter.NewStages(&c.Filter)
	return &live{
		fetchers: c.Fetchers, parsers: c.Parsers, maxLinks: c.MaxLinks, maxEmbedHops: c.MaxEmbedHops,
		traps: c.Filter.Traps, scope: sc, filters: fs,
		timeout: c.Fetch.Timeout, maxBody: c.Fetch.MaxBody, stopGrace: c.StopGrace,
	}
}

// Change is one setting changed by Reconfigure.
type Change struct {
	Name     string `json:"name"`
	Old, New any
}

// ErrNotRunning is returned by Reconfigure once Run has returned.
var ErrNotRunning = errors.New("agent: the crawl is not running")

// reconfigReq asks the control loop for a set of changes.
type reconfigReq struct {
	changes map[string]any
	reply   chan reconfigReply
}

type reconfigReply struct {
	changes []Change
	err     error
}

// Reconfigure changes settings of the running crawl, all or nothing:
// changes maps setting names to values in the JSON form ("2s", "8MiB", 4,
// true). It returns the settings that changed, old and new, or an error —
// one line naming the first setting that is unknown, out of range, or not
// live (and why) — and then changes nothing. The request is carried out by
// the crawl's control loop, which owns the running values; the change is
// logged, and saved in state/ so that a restart keeps it. Called before
// Run, it waits for Run to start (or ctx to end). In a crawl of several
// agents, a cluster-wide setting changes on every agent or on none
// (clusterconfig.go).
func (a *Agent) Reconfigure(ctx context.Context, changes map[string]any) ([]Change, error) {
	if n := a.clusterNode.Load(); n != nil {
		a.curMu.Lock()
		wide, _ := clusterWide(a.cur, changes)
		a.curMu.Unlock()
		if len(wide) > 0 {
			return a.reconfigureCluster(ctx, n, changes)
		}
	}
	return a.reconfigureLocal(ctx, changes)
}

// reconfigureLocal is Reconfigure on this agent alone.
func (a *Agent) reconfigureLocal(ctx context.Context, changes map[string]any) ([]Change, error) {
	req := reconfigReq{changes: changes, reply: make(chan reconfigReply, 1)}
	select {
	case a.reconfig <- req:
	case <-a.runDone:
		return nil, ErrNotRunning
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-req.reply:
		return r.changes, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Settings returns the settings in force (the JSON form of every setting).
func (a *Agent) Settings() map[string]any {
	a.curMu.Lock()
	defer a.curMu.Unlock()
	c := a.cur
	return c.Table().Map()
}

// plan validates changes against cur and returns the new configuration
// and the list of changes; nothing is applied.
func plan(cur Config, changes map[string]any) (Config, []Change, error) {
	next := cur
	next.SeedURLs = slices.Clone(cur.SeedURLs)
	nt, ct := next.Table(), cur.Table()
	names := make([]string, 0, len(changes))
	for n := range changes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := nt.Lookup(n)
		if s == nil {
			return cur, nil, fmt.Errorf("unknown setting %q", n)
		}
		if err := s.SetValue(changes[n]); err != nil {
			return cur, nil, err
		}
		if err := s.Validate(); err != nil {
			return cur, nil, err
		}
	}
	if err := nt.Validate(); err != nil {
		return cur, nil, err
	}
	var out []Change
	for _, n := range names {
		s, old := nt.Lookup(n), ct.Lookup(n)
		if s.String() == old.String() {
			continue
		}
		if !s.Live {
			return cur, nil, fmt.Errorf("--%s cannot change while the crawl runs: %s", n, s.Fixed)
		}
		out = append(out, Change{Name: n, Old: old.Value(), New: s.Value()})
	}
	return next, out, nil
}

// control is the state the control loop owns: the settings in force and
// the worker pools they size.
type control struct {
	a                  *Agent
	ctx                context.Context // the crawl's: its end is a stop
	fetchers, parsers  *pool
	progEvery, cpEvery chan time.Duration // to the progress and checkpoint loops
}

// pool is a set of goroutines of one kind, grown and shrunk by the control
// loop: each one stops when its quit channel closes.
type pool struct {
	wg    sync.WaitGroup
	quits []chan struct{}
	run   func(id int, quit <-chan struct{}) // id: 1, 2, ... (a fetcher's in the crawl log)
	gauge *atomic.Int64                      // the pool's size
}

func (p *pool) resize(n int) {
	for len(p.quits) < n {
		q := make(chan struct{})
		p.quits = append(p.quits, q)
		id := len(p.quits)
		p.wg.Go(func() { p.run(id, q) })
	}
	for len(p.quits) > n {
		close(p.quits[len(p.quits)-1])
		p.quits = p.quits[:len(p.quits)-1]
	}
	p.gauge.Store(int64(n))
}

// loop serves Reconfigure until ctx ends.
func (c *control) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case req := <-c.a.reconfig:
			changes, err := c.apply(req.changes)
			req.reply <- reconfigReply{changes, err}
		}
	}
}

// apply carries out one Reconfigure: the frontier first (the one step that
// can fail), then the agent's own goroutines and values.
func (c *control) apply(changes map[string]any) ([]Change, error) {
	a := c.a
	a.curMu.Lock()
	cur := a.cur
	a.curMu.Unlock()
	next, diff, err := plan(cur, changes)
	if err != nil || len(diff) == 0 {
		return nil, err
	}
	if cuts, ok := a.frontierChange(&cur, &next); ok {
		if err := a.frontier.Reconfigure(c.ctx, next.Frontier, cuts); err != nil {
			return nil, err
		}
	}
	a.live.Store(newLive(&next, a.seeds))
	c.fetchers.resize(next.Fetchers)
	c.parsers.resize(next.Parsers)
	if next.Progress != cur.Progress {
		select {
		case c.progEvery <- next.Progress:
		case <-c.ctx.Done():
		}
	}
	if next.CheckpointEvery != cur.CheckpointEvery {
		select {
		case c.cpEvery <- next.CheckpointEvery:
		case <-c.ctx.Done():
		}
	}
	a.adopt(next, diff)
	return diff, nil
}

// frontierChange reports whether going from cur to next changes the
// frontier's settings or cuts, and the cuts under next.
func (a *Agent) frontierChange(cur, next *Config) (frontier.Cuts, bool) {
	if next.Frontier == cur.Frontier && next.Filter == cur.Filter {
		return frontier.Cuts{}, false
	}
	if next.Filter != cur.Filter {
		return a.cutsFor(next), true
	}
	return a.frontier.Cuts(), true
}

// adopt makes next, which the frontier and the agent's goroutines already
// follow, the settings in force: logged, and saved in state/ with every
// change so far. It runs on the control loop, or before it starts.
func (a *Agent) adopt(next Config, diff []Change) {
	a.curMu.Lock()
	a.cur = next
	a.curMu.Unlock()
	for _, ch := range diff {
		a.log.Info("setting changed", "setting", ch.Name, "old", ch.Old, "new", ch.New)
		a.changed[ch.Name] = ch.New
	}
	if err := a.saveLive(); err != nil {
		a.log.Error("save live settings", "err", err)
	}
}

// cutsFor returns the cuts that hold queued URLs to a changed scope and
// depth limit, and to the fetch filter, when they come up for dispatch.
func (a *Agent) cutsFor(c *Config) frontier.Cuts {
	cuts := frontier.Cuts{MaxDepth: c.Filter.Traps.MaxDepth}
	l := newLive(c, a.seeds)
	if c.Filter.Scope == filter.ScopeAll && !l.filters.Active(filter.StageFetch) {
		return cuts
	}
	offScope := c.EmbedsOffScope
	cuts.Keep = func(raw string, m frontier.Meta) bool {
		u, err := urlx.Parse(raw)
		if err != nil {
			return true
		}
		if c.Filter.Scope != filter.ScopeAll && !(m.Embeds > 0 && offScope) && !l.scope.Allows(u) {
			return false
		}
		return a.passURLWith(l.filters, filter.StageFetch, u, a.vias.name(m.Via), m)
	}
	return cuts
}

// saveLive writes the settings changed while running to state/.
func (a *Agent) saveLive() error {
	b, err := json.MarshalIndent(a.changed, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(filepath.Join(a.cfg.Dir, "state", liveFile), append(b, '\n'), atomicfile.Options{Sync: true})
}

// loadLive applies the settings saved by earlier runs' Reconfigure over
// cfg, except those given on the command line this time (cfg.Given): those
// win, and the log says so — but not a cluster-wide setting of an agent of
// a crawl of several, which every agent changed together: the saved value
// is the crawl's, and the same command lines resume it. It returns the
// saved changes still in force.
func loadLive(cfg *Config, logf func(msg string, args ...any)) (map[string]any, error) {
	saved := map[string]any{}
	b, err := os.ReadFile(filepath.Join(cfg.Dir, "state", liveFile))
	if errors.Is(err, os.ErrNotExist) {
		return saved, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &saved); err != nil {
		return nil, fmt.Errorf("%s: %v", liveFile, err)
	}
	t := cfg.Table()
	for name, v := range saved {
		s := t.Lookup(name)
		switch {
		case slices.Contains(cfg.Given, name) && !(s != nil && s.Cluster && cfg.Cluster.Enabled()):
			logf("the command line overrides a setting changed while the crawl ran", "setting", name, "saved", v, "given", s.Value())
			delete(saved, name)
		case s == nil || s.SetValue(v) != nil || s.Validate() != nil:
			logf("a setting changed while the crawl ran no longer applies", "setting", name, "saved", v)
			delete(saved, name)
		default:
			logf("setting changed while the crawl ran kept", "setting", name, "value", v)
		}
	}
	return saved, nil
}
