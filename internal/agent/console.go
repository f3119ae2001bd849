package agent

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrel-crawler/petrel/internal/console"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/metrics"
	"github.com/petrel-crawler/petrel/internal/stats"
)

// The agent is the console's Crawl: what the operator sees and steers.
var _ console.Crawl = crawlView{}

// openConsole binds the console's address, when one is set, so that a
// wrong or busy address fails the start rather than the first visit.
func (a *Agent) openConsole() error {
	if a.cfg.Console.Addr == "" {
		return nil
	}
	file := a.cfg.Console.TokenFile
	if file == "" {
		file = filepath.Join(a.cfg.Dir, "state", "console.token")
	}
	tok, err := console.LoadToken(file)
	if err != nil {
		return usageErr("--console-token-file: %v", err)
	}
	srv, err := console.Listen(console.Options{
		Addr:    a.cfg.Console.Addr,
		Token:   tok,
		Crawl:   crawlView{a},
		Metrics: a.metrics.Handler(),
		Log:     a.logHub,
		Tally:   a.tally,
		Logger:  a.log,
	})
	if err != nil {
		return usageErr("--console-addr: %v", err)
	}
	a.console = srv
	return nil
}

// servedMetrics is the metrics when the console serves them (nil: no
// console, so no histogram is observed).
func (a *Agent) servedMetrics() *metrics.Metrics {
	if a.console == nil {
		return nil
	}
	return a.metrics
}

// serveConsole runs the console until ctx ends, announcing it on the
// progress writer.
func (a *Agent) serveConsole(ctx context.Context) {
	if a.console == nil {
		return
	}
	if a.progress != nil {
		fmt.Fprintf(a.progress, "petrel: console at %s (one-time login link: %s)\n", a.console.URL(), a.console.LoginURL())
	}
	// crawl.log's lines go to the console's hub, for GET /api/v1/log.
	sub := a.crawlLog.Subscribe(4096)
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		for l := range sub.Lines() {
			a.logHub.Line(strings.TrimSuffix(l, "\n"))
		}
	}()
	defer func() {
		sub.Close()
		<-pumped
	}()
	if err := a.console.Serve(ctx); err != nil {
		a.log.Error("console", "err", err)
	}
}

// Pause stops new requests from starting (the frontier's Pause: requests
// already started finish).
func (a *Agent) Pause() error {
	if a.stopping.Load() {
		return fmt.Errorf("%w: the crawl is stopping", console.ErrState)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.frontier.Pause(ctx); err != nil {
		return notRunning(err)
	}
	a.log.Info("paused")
	return nil
}

// Resume lets requests start again.
func (a *Agent) Resume() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.frontier.Resume(ctx); err != nil {
		return notRunning(err)
	}
	a.log.Info("resumed")
	return nil
}

// Stop begins a clean stop by the path SIGINT and SIGTERM take: the state
// is saved and the same command resumes the crawl; an agent of a cluster
// leaves it first (handoff.go).
func (a *Agent) Stop() {
	a.stopping.Store(true)
	a.stopMu.Lock()
	stop := a.stopRun
	a.stopMu.Unlock()
	if stop != nil {
		stop()
	}
}

// State is the crawl's lifecycle state.
func (a *Agent) State() console.State {
	switch {
	case a.finished.Load():
		return console.Finished
	case a.stopping.Load():
		return console.Stopping
	case a.frontier.Paused():
		return console.Paused
	}
	return console.Running
}

// Counters returns the counters, with the sieve's backlog.
func (a *Agent) Counters() stats.Snapshot {
	s := a.stats.Snapshot()
	s["SieveBuffered"] = a.frontier.SieveBuffered()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	if waiting, _, err := a.frontier.KeyStates(ctx); err == nil {
		s["WaitingKeys"] = int64(waiting)
	}
	cancel()
	if a.console != nil {
		s["ConsoleRefused"] = a.console.Refused()
		s["ConsoleConnsRefused"] = a.console.ConnsRefused()
	}
	if n := a.clusterNode.Load(); n != nil {
		s["ClusterConnsRefused"] = n.ConnsRefused()
	}
	if w := a.warc.Load(); w != nil {
		s["WARCBytes"] += w.Stats().CompressedBytes // added to the counter at the close
	}
	return s
}

// AddSeeds offers URLs as seeds: through the blocklist, the scope and the
// trap rules like any URL (the scope is the one the crawl started with).
// A URL the sieve knows already is queued again when it was given up after
// failures (state/failed), and else refused as known.
func (a *Agent) AddSeeds(urls []string) []console.SeedResult {
	out := make([]console.SeedResult, 0, len(urls))
	for _, raw := range urls {
		u, err := parseSeed(raw)
		if err != nil {
			out = append(out, console.SeedResult{URL: raw, Reason: err.Error()})
			continue
		}
		r := console.SeedResult{URL: u.String()}
		if why := a.rule(u, frontier.Meta{}); why != "" {
			a.admit(u, "", frontier.Meta{}) // counts and logs the refusal
			r.Reason = string(why)
		} else if known, err := a.knownSeed(u, &r); known || err != nil { // failedlog.go
			if err != nil {
				r.Reason = err.Error()
			}
		} else if err := a.frontier.Enqueue(u, frontier.Meta{}); err != nil {
			r.Reason = err.Error()
		} else {
			r.Accepted = true
		}
		out = append(out, r)
	}
	return out
}

// DescribeSettings describes every setting: value, default, whether it
// can change while the crawl runs (and why not), whether it is
// cluster-wide, help.
func (a *Agent) DescribeSettings() []console.SettingInfo {
	a.curMu.Lock()
	cur := a.cur
	a.curMu.Unlock()
	var out []console.SettingInfo
	for _, s := range cur.Table().Grouped() {
		if s.Name == "seed-urls" {
			continue
		}
		out = append(out, console.SettingInfo{Name: s.Name, Value: s.Value(), Default: s.Default(), Kind: s.Kind.String(),
			Group: s.Group.String(), Live: s.Live, Fixed: s.Fixed, ClusterWide: s.Cluster, Help: s.Help, Choices: s.Choices})
	}
	return out
}

// crawlView is the Agent as the console's Crawl: Reconfigure without the
// list of changes (the console answers with the settings in force).
type crawlView struct{ *Agent }

// Reconfigure changes live settings, all or nothing.
func (c crawlView) Reconfigure(changes map[string]any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.Agent.Reconfigure(ctx, changes)
	if errors.Is(err, ErrNotRunning) {
		return fmt.Errorf("%w: %v", console.ErrState, err)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", console.ErrInvalid, err)
	}
	return nil
}

// Members lists the cluster's members as this agent's ownership view has
// them (nil when the agent is not in a cluster): each one's share of the
// keys in parts per thousand, from its weight.
func (a *Agent) Members() []console.Member {
	n := a.clusterNode.Load()
	if n == nil {
		return nil
	}
	v := n.View()
	if v == nil {
		return nil
	}
	var total uint64
	for _, m := range v.Agents {
		total += uint64(max(m.Weight, 1))
	}
	out := make([]console.Member, 0, len(v.Agents))
	for _, m := range v.Agents {
		st := fmt.Sprintf("member (view %d)", v.Epoch)
		if m.Name == n.Name() {
			st = fmt.Sprintf("this agent (view %d)", v.Epoch)
		}
		out = append(out, console.Member{Name: m.Name, State: st, Owned: int(uint64(max(m.Weight, 1)) * 1000 / max(total, 1))})
	}
	return out
}

// Block adds entries to the blocklist, saved in state/ before it is in
// force, and drops the queued URLs it names. The blocklist is a
// cluster-wide value: in a crawl of several agents it changes on every
// agent or on none (blockCluster).
func (a *Agent) Block(ctx context.Context, entries []string) (console.BlockResult, error) {
	if a.cfg.Cluster.Enabled() {
		return a.blockCluster(ctx, entries)
	}
	return a.applyBlock(ctx, entries)
}

// applyBlock adds entries to this agent's blocklist and drops the queued
// URLs it names (Block once the other agents, if any, agreed).
func (a *Agent) applyBlock(ctx context.Context, entries []string) (console.BlockResult, error) {
	added, err := a.block.add(entries)
	if err != nil {
		return console.BlockResult{}, fmt.Errorf("%w: %v", console.ErrInvalid, err)
	}
	n, err := a.dropBlocked(ctx)
	a.log.Info("blocklist", "added", added, "dropped", n)
	return console.BlockResult{Added: added, Dropped: n}, err
}

// consoleState is the part of the Agent the console needs.
type consoleState struct {
	console *console.Server
	logHub  *console.LogHub
	tally   *console.Tally
	block   blocklist

	stopMu   sync.Mutex
	stopRun  context.CancelFunc
	stopping atomic.Bool
	finished atomic.Bool
}
