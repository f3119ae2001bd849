package agent

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/petrel-crawler/petrel/internal/console"
	"github.com/petrel-crawler/petrel/internal/frontier"
)

// keyState names a visit state's state for the console.
func keyState(k frontier.KeyInfo) string {
	switch {
	case k.Broken:
		return "broken"
	case k.Waiting != "":
		return "waiting"
	case k.Queued > 0 || k.InFlight > 0:
		return "active"
	}
	return "idle"
}

// Hosts lists the visit states holding most URLs.
func (a *Agent) Hosts(ctx context.Context, q console.HostQuery) ([]console.HostSummary, error) {
	keys, err := a.frontier.Keys(ctx, q.Limit)
	if err != nil {
		return nil, notRunning(err)
	}
	out := make([]console.HostSummary, 0, len(keys))
	for _, k := range keys {
		out = append(out, console.HostSummary{Host: k.Key, Queued: k.Queued, State: keyState(k)})
	}
	return out, nil
}

// Host describes one visit state, with the robots.txt and DNS state of
// its host.
func (a *Agent) Host(ctx context.Context, name string) (console.HostDetail, bool, error) {
	k, ram, disk, budget, ok, err := a.frontier.KeyQueue(ctx, name)
	if err != nil || !ok {
		return console.HostDetail{}, ok, notRunning(err)
	}
	d := console.HostDetail{
		HostSummary: console.HostSummary{Host: k.Key, Queued: k.Queued, State: keyState(k)},
		InFlight:    k.InFlight, Delay: k.Delay.String(), DelayReason: k.DelayWhy.String(),
		BudgetUsed: budget, BudgetLimit: a.frontier.Settings().MaxURLsPerKey,
		Virtualized: k.OnDisk, Next: ram, NextOnDisk: disk,
	}
	if k.Waiting != "" {
		d.State += " (" + k.Waiting + ")"
	}
	if k.Addr.IsValid() {
		d.Addr = k.Addr.String()
	}
	if !k.NextFetch.IsZero() {
		d.NextFetch = timePtr(k.NextFetch)
	}
	if !k.IPNextFetch.IsZero() {
		d.IPNextFetch = timePtr(k.IPNextFetch)
	}
	d.Robots = "not fetched yet"
	if h, err := a.frontier.Host(ctx, k.Host); err == nil {
		if rs, ok := h.Robots[robotsKey(k.Key, ram, disk)]; ok {
			switch {
			case rs.Dead:
				d.Robots = "unavailable after every retry: its URLs are dropped"
			case rs.InFlight:
				d.Robots = "being fetched"
			case rs.Fetched:
				d.Robots = "held, fetched again after " + rs.Expires.UTC().Format(time.RFC3339)
			default:
				d.Robots = fmt.Sprintf("not held (%d failures so far)", rs.Failures)
			}
		}
		if h.Dead {
			d.Robots += "; the host did not resolve or its address is refused"
		}
	}
	return d, true, nil
}

func timePtr(t time.Time) *time.Time { return &t }

// robotsKey is the scheme and authority whose robots.txt a key's detail
// reports: the key itself under --assign authority, else the authority of
// its next URL in ram or disk ("" when it queues none).
func robotsKey(key string, ram, disk []string) string {
	if strings.Contains(key, "://") {
		return key
	}
	return frontier.NextAuthority(ram, disk)
}

// notRunning maps the frontier's "not running" to a 409.
func notRunning(err error) error {
	if errors.Is(err, frontier.ErrNotRunning) {
		return fmt.Errorf("%w: the crawl's scheduler is not running", console.ErrState)
	}
	return err
}

// dropBlocked empties the visit states the blocklist now names.
func (a *Agent) dropBlocked(ctx context.Context) (int64, error) {
	n, err := a.frontier.Drop(ctx, func(key, host string, addr netip.Addr) bool {
		return a.block.host(host) || (addr.IsValid() && a.block.addr(addr))
	})
	return n, notRunning(err)
}
