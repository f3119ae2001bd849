package frontier

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/diskq"
	"github.com/petrel-crawler/petrel/internal/sieve"
	"github.com/petrel-crawler/petrel/internal/stats"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// allowAll is a robots.txt with no rules.
type allowAll struct{ delay time.Duration }

func (allowAll) Allowed(string) bool         { return true }
func (a allowAll) CrawlDelay() time.Duration { return a.delay }

// denyPrefix disallows paths under a prefix.
type denyPrefix string

func (d denyPrefix) Allowed(p string) bool   { return len(p) < len(d) || p[:len(d)] != string(d) }
func (denyPrefix) CrawlDelay() time.Duration { return 0 }

// mapResolver resolves names from a map; other names fail permanently.
type mapResolver map[string]netip.Addr

type noSuchHost string

func (e noSuchHost) Error() string { return "no such host " + string(e) }
func (noSuchHost) Permanent() bool { return true }

func (m mapResolver) Lookup(_ context.Context, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return []netip.Addr{a}, nil
	}
	return nil, noSuchHost(host)
}

// fetchRecord is one task as a fake fetcher saw it.
type fetchRecord struct {
	url        string
	key        string
	addr       netip.Addr
	robots     bool
	meta       Meta
	result     Result
	start, end time.Time
}

// harness drives a real Frontier (memory sieve, disk ready queue, disk
// virtualizer) with fake fetchers that answer without a network.
type harness struct {
	t     *testing.T
	f     *Frontier
	stats *stats.Crawl

	mu  sync.Mutex
	log []fetchRecord
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	ready, err := diskq.Open(t.TempDir(), diskq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ready.Close() })
	virt, err := diskq.OpenQueues(t.TempDir(), diskq.Options{SegmentBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { virt.Close() })
	cfg.Ready = ready
	if cfg.Virtualizer == nil {
		cfg.Virtualizer = virt
	}
	if cfg.Stats == nil {
		cfg.Stats = new(stats.Crawl)
	}
	if cfg.RetryDelay == 0 {
		cfg.RetryDelay = time.Millisecond
	}
	cfg.MinFlushGap = time.Millisecond
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg.OpenSieve = func(r *Receiver) (Sieve, error) { return sieve.NewMemoryPrefix(r, MetaLen), nil }
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, f: f, stats: cfg.Stats}
}

func (h *harness) enqueue(raw string) {
	h.t.Helper()
	u, err := urlx.Parse(raw)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.f.Enqueue(u, Meta{}); err != nil {
		h.t.Fatal(err)
	}
}

// run starts n fake fetchers answering with answer (nil: robots allow all,
// pages fetched at once) and runs the scheduler to its end.
func (h *harness) run(n int, answer func(t *Task) Outcome) error {
	h.t.Helper()
	if answer == nil {
		answer = func(t *Task) Outcome {
			if t.Robots {
				return Outcome{Result: Fetched, Robots: allowAll{}}
			}
			return Outcome{Result: Fetched}
		}
	}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range h.f.Todo() {
				start := time.Now()
				o := answer(t)
				o.Task = t
				if o.End.IsZero() {
					o.End = time.Now()
				}
				h.mu.Lock()
				h.log = append(h.log, fetchRecord{url: t.URL(), key: t.SchemeAuthority, addr: t.Addr,
					robots: t.Robots, meta: t.Meta, result: o.Result, start: start, end: o.End})
				h.mu.Unlock()
				h.f.Done(o)
			}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := h.f.Run(ctx)
	wg.Wait()
	if ctx.Err() != nil {
		h.t.Fatalf("frontier did not finish: %v", ctx.Err())
	}
	return err
}

// pages returns the page (non-robots) URLs fetched, in fetch order.
func (h *harness) pages() []string {
	var out []string
	for _, r := range h.log {
		if !r.robots {
			out = append(out, r.url)
		}
	}
	return out
}

// checkGaps asserts that requests grouped by group never overlap and are
// separated by at least delay.
func (h *harness) checkGaps(group func(fetchRecord) string, delay time.Duration) {
	h.t.Helper()
	by := map[string][]fetchRecord{}
	for _, r := range h.log {
		by[group(r)] = append(by[group(r)], r)
	}
	for g, rs := range by {
		sort.Slice(rs, func(i, j int) bool { return rs[i].start.Before(rs[j].start) })
		for i := 1; i < len(rs); i++ {
			if gap := rs[i].start.Sub(rs[i-1].end); gap < delay {
				h.t.Errorf("%s: %s started %v after the end of %s, want ≥ %v", g, rs[i].url, gap, rs[i-1].url, delay)
				return
			}
		}
	}
}

func hostName(i int) string { return fmt.Sprintf("h%d.example.test", i) }

// inFlight counts the fetches in progress and the most seen at once.
type inFlight struct {
	mu        sync.Mutex
	cur, peak int
}

// fetch takes d, counted, and returns how many were in flight with it.
func (c *inFlight) fetch(d time.Duration) int {
	c.mu.Lock()
	c.cur++
	n := c.cur
	c.peak = max(c.peak, n)
	c.mu.Unlock()
	time.Sleep(d)
	c.mu.Lock()
	c.cur--
	c.mu.Unlock()
	return n
}
