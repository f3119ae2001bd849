package frontier

import (
	"context"
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

// countingSieve is a sieve that keeps nothing and counts its flushes.
type countingSieve struct{ flushes atomic.Int64 }

func (c *countingSieve) Enqueue([]byte) (bool, error) { return false, nil }
func (c *countingSieve) Flush() error                 { c.flushes.Add(1); return nil }
func (c *countingSieve) Close() error                 { return nil }

// flushAfterBacklog sets up the stall of a real-shaped web: ten hosts
// with a Crawl-delay of 1s hold 30 queued URLs each, while the sieve holds
// 500 backlog URLs not yet flushed, after 10,000 flushed: on backlogHosts
// other hosts, or (backlogHosts 0) on the ten hosts themselves; the fetchers wait (fetchers of them idle, as the agent's
// FetcherWaitNano counts). It runs the simulation and returns the
// simulated time at which the first sieve flush started, and the URLs
// still queued then (0, 0 when none started before the queues drained).
func flushAfterBacklog(t *testing.T, backlogHosts, fetchers int) (time.Duration, int64) {
	addrs := map[string]netip.Addr{}
	for i := range 10 {
		addrs[fmt.Sprintf("cd%d.test", i)] = netip.AddrFrom4([4]byte{10, 9, 40, byte(i + 1)})
	}
	sv := new(countingSieve)
	m := newSim(t, Config{Settings: Settings{HostDelay: 100 * time.Millisecond, IPDelay: 10 * time.Millisecond, CrawlDelayCap: time.Minute},
		OpenSieve: func(*Receiver) (Sieve, error) { return sv, nil }}, addrs)
	for i := range 10 {
		for p := range 30 {
			m.add(fmt.Sprintf("http://cd%d.test/p%d", i, p), Meta{})
		}
	}
	m.f.sieveIn.Store(10_000)
	m.f.sieveFlushed.Store(10_000)
	for i := range 500 {
		raw := fmt.Sprintf("http://cd%d.test/a/b/c%d", i%10, i)
		if backlogHosts > 0 {
			raw = fmt.Sprintf("http://deep%d.test/a/b/c%d", i%backlogHosts, i)
		}
		u, err := urlx.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.f.Enqueue(u, Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	l := &runLoop{ctx: context.Background()}
	start, last := m.clock.Now(), m.clock.Now()
	var at time.Duration
	var queued int64
	m.check = func() {
		if err := m.s.checkQueued(); err != nil {
			t.Fatal(err)
		}
		now := m.clock.Now()
		m.f.stats.FetcherWaitNano.Add(int64(fetchers) * int64(now.Sub(last)))
		last = now
		if m.s.flushing || m.s.idle() {
			return
		}
		m.s.finished(m.f.now(), l)
		if m.s.flushing {
			at, queued = now.Sub(start), m.s.queuedURLs
		}
	}
	m.run(func(tk *Task) (Outcome, time.Duration) {
		if tk.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{delay: time.Second}}, time.Millisecond
		}
		return Outcome{Result: Fetched}, 30 * time.Millisecond
	}, 10_000)
	if m.s.flushing && sv.flushes.Load() == 0 {
		// startFlush's goroutine has not run yet: wait for its answer.
		<-m.s.flushDone
	}
	return at, queued
}

// TestSieveFlushWhenFetchersWaitOnBacklog: when the fetchers wait and the
// sieve's backlog holds hosts that have no work in the workbench, the
// sieve is flushed at once, not once the Crawl-delay hosts have drained
// their queues (it was: about 27 s of simulated time later, with 40 URLs
// left).
func TestSieveFlushWhenFetchersWaitOnBacklog(t *testing.T) {
	at, queued := flushAfterBacklog(t, 190, 64)
	t.Logf("first flush after %v, %d URLs queued", at, queued)
	if at == 0 || at > 2*time.Second || queued < 200 {
		t.Errorf("first flush after %v with %d URLs queued; want within 2s, the Crawl-delay hosts' queues still full", at, queued)
	}
}

// TestSieveNoFlushForBacklogOfActiveHosts: a backlog on the hosts the
// workbench holds already, or fetchers that do not wait, do not force a
// flush (a flush merges the whole store: a workbench with work keeps the
// bounds of flushWanted).
func TestSieveNoFlushForBacklogOfActiveHosts(t *testing.T) {
	for _, c := range []struct {
		hosts, fetchers int
	}{{0, 64}, {190, 0}} {
		at, queued := flushAfterBacklog(t, c.hosts, c.fetchers)
		t.Logf("backlog hosts %d, fetchers %d: first flush after %v, %d URLs queued", c.hosts, c.fetchers, at, queued)
		if at != 0 && queued >= 40 {
			t.Errorf("backlog on %d hosts, %d fetchers waiting: flush after %v with %d URLs queued; want none before the queues run low",
				c.hosts, c.fetchers, at, queued)
		}
	}
}
