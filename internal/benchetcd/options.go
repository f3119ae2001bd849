package benchetcd

import (
	"errors"
	"fmt"
	"time"

	"github.com/petrel-crawler/petrel/internal/coord"
)

// Watch names what each agent but the writer watches.
const (
	WatchAgent  = "agent"  // what an agent follows: coord.FollowFrom (every key but the figures)
	WatchPrefix = "prefix" // the crawl's whole prefix, as coord.Follow does (every agent's figures included)
)

// Options are the simulation's parameters. The zero value of a field
// means its default (Defaults).
type Options struct {
	Agents       int           // simulated agents (≥ 2: one writes the views, another leaves and returns)
	Duration     time.Duration // the measured window
	PublishEvery time.Duration // each agent publishes its figures this often, ±20 %
	ViewEvery    time.Duration // one agent leaves and returns this often (the first at half of it)
	TTL          time.Duration // the agents' lease TTL (whole seconds)
	Settle       time.Duration // the view writer's Policy.Settle
	Watch        string        // WatchAgent or WatchPrefix
	Grace        time.Duration // after the window, how long views written in it may take to reach every agent
	Log          func(string)  // progress lines; nil: none
}

// Defaults returns o with its zero fields set to the defaults.
func (o Options) Defaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if o.Agents == 0 {
		o.Agents = 100
	}
	def(&o.Duration, 60*time.Second)
	def(&o.PublishEvery, 2*time.Second)
	def(&o.ViewEvery, 60*time.Second)
	def(&o.TTL, 10*time.Second)
	def(&o.Settle, time.Second)
	def(&o.Grace, 10*time.Second)
	if o.Watch == "" {
		o.Watch = WatchAgent
	}
	if o.Log == nil {
		o.Log = func(string) {}
	}
	return o
}

func (o Options) check() error {
	switch {
	case o.Agents < 2:
		return errors.New("benchetcd: --agents: want at least 2 (one writes the views, another leaves and returns)")
	case o.TTL < time.Second || o.TTL%time.Second != 0:
		return fmt.Errorf("benchetcd: --ttl %s: want whole seconds, at least 1s (etcd's leases count in seconds)", o.TTL)
	case o.PublishEvery <= 0 || o.ViewEvery <= 0 || o.Duration <= 0:
		return errors.New("benchetcd: --duration, --publish-every and --view-every must be positive")
	case o.Watch != WatchAgent && o.Watch != WatchPrefix:
		return fmt.Errorf("benchetcd: --watch %q: want %q or %q", o.Watch, WatchAgent, WatchPrefix)
	}
	return nil
}

// Target is the coordinator the agents use.
type Target struct {
	Endpoints []string
	Authority *coord.Authority // the crawl's; each agent is issued its own certificate
	PID       int              // the coordinator's process, for its CPU and RSS; 0: not measured
}
