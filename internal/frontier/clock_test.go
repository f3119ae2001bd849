package frontier

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/clock"
)

// Deterministic tests of the scheduler's timing on a fake clock (see sim):
// every gap is exact, so each test asserts the delay itself, not a bound
// loose enough for a busy machine.

// TestSimPoliteness: three hosts on one address, a host delay and an IP
// delay. Every gap per key is at least the host delay and per address at
// least the IP delay, and the schedule is tight: the address is never idle
// longer than its delay while a key is due.
func TestSimPoliteness(t *testing.T) {
	ip := netip.MustParseAddr("10.9.0.1")
	addrs := map[string]netip.Addr{"a.test": ip, "b.test": ip, "c.test": ip}
	m := newSim(t, Config{Settings: Settings{HostDelay: 300 * time.Millisecond, IPDelay: 100 * time.Millisecond}}, addrs)
	for i := 0; i < 10; i++ {
		for _, h := range []string{"a", "b", "c"} {
			m.add(fmt.Sprintf("http://%s.test/p%d", h, i), Meta{})
		}
	}
	m.run(fetched(50*time.Millisecond), 10000)
	if n := len(m.log); n != 33 {
		t.Fatalf("%d fetches, want 30 pages and 3 robots.txt", n)
	}
	for k, gs := range m.gaps(simKey) {
		for _, g := range gs {
			if g < 300*time.Millisecond {
				t.Errorf("%s: gap %v < host delay", k, g)
			}
		}
	}
	for a, gs := range m.gaps(simAddr) {
		for _, g := range gs {
			if g != 100*time.Millisecond {
				// Three keys of 300 ms share the address: after each fetch
				// of 50 ms another key is due, so every gap is the IP delay.
				t.Errorf("%s: gap %v, want exactly the IP delay (100ms)", a, g)
			}
		}
	}
}

// TestSimRetryAfter: a 503 with Retry-After pushes the key's next request
// back by exactly that much, capped at MaxDelay.
func TestSimRetryAfter(t *testing.T) {
	for _, c := range []struct{ retryAfter, want time.Duration }{
		{5 * time.Second, 5 * time.Second},
		{time.Hour, 30 * time.Second}, // MaxDelay
		{10 * time.Millisecond, 2 * time.Second},
	} {
		m := newSim(t, Config{Settings: Settings{HostDelay: 200 * time.Millisecond, MaxDelay: 30 * time.Second, MaxRetries: 2, RetryDelay: 2 * time.Second}},
			map[string]netip.Addr{"a.test": netip.MustParseAddr("10.9.1.1")})
		m.add("http://a.test/x", Meta{})
		tries := 0
		m.run(func(tk *Task) (Outcome, time.Duration) {
			if tk.Robots {
				return Outcome{Result: Fetched, Robots: allowAll{}}, time.Millisecond
			}
			if tries++; tries == 1 {
				return Outcome{Result: RetryLater, RetryAfter: c.retryAfter}, time.Millisecond
			}
			return Outcome{Result: Fetched}, time.Millisecond
		}, 1000)
		gs := m.gaps(simKey)["http://a.test"]
		if len(gs) != 2 || gs[1] != c.want {
			t.Errorf("Retry-After %v: gaps %v, want the retry after %v (the larger of Retry-After up to MaxDelay, and RetryDelay)", c.retryAfter, gs, c.want)
		}
	}
}

// TestSimCrawlDelay: robots.txt Crawl-delay sets the gap, capped at
// CrawlDelayCap; it never lowers the host delay.
func TestSimCrawlDelay(t *testing.T) {
	for _, c := range []struct{ crawlDelay, want time.Duration }{
		{2 * time.Second, 2 * time.Second},
		{time.Hour, 10 * time.Second}, // CrawlDelayCap
		{time.Millisecond, 500 * time.Millisecond},
	} {
		m := newSim(t, Config{Settings: Settings{HostDelay: 500 * time.Millisecond, CrawlDelayCap: 10 * time.Second}},
			map[string]netip.Addr{"a.test": netip.MustParseAddr("10.9.2.1")})
		for i := 0; i < 4; i++ {
			m.add(fmt.Sprintf("http://a.test/p%d", i), Meta{})
		}
		m.run(func(tk *Task) (Outcome, time.Duration) {
			if tk.Robots {
				return Outcome{Result: Fetched, Robots: allowAll{delay: c.crawlDelay}}, time.Millisecond
			}
			return Outcome{Result: Fetched}, 20 * time.Millisecond
		}, 1000)
		for _, g := range m.gaps(simKey)["http://a.test"] {
			if g != c.want {
				t.Errorf("Crawl-delay %v: gap %v, want %v", c.crawlDelay, g, c.want)
			}
		}
		k, ok := m.s.idleKeys[m.s.idleHash("http://a.test")]
		if !ok {
			t.Fatal("the key did not settle into an idle key")
		}
		if k.delayWhy != DelayCrawlDelay && c.want != 500*time.Millisecond {
			t.Errorf("delay reason %v, want crawl-delay", k.delayWhy)
		}
		if k.crawlMs != uint32(c.crawlDelay/time.Millisecond) {
			t.Errorf("idle key's Crawl-delay %d ms, want %v", k.crawlMs, c.crawlDelay)
		}
	}
}

// TestSimAdaptiveDelay: with DelayFactor, the gap is factor × the fetch's
// duration when that is more than the host delay, up to MaxDelay.
func TestSimAdaptiveDelay(t *testing.T) {
	m := newSim(t, Config{Settings: Settings{HostDelay: 100 * time.Millisecond, DelayFactor: 4, MaxDelay: time.Second}},
		map[string]netip.Addr{"a.test": netip.MustParseAddr("10.9.3.1")})
	durs := []time.Duration{10 * time.Millisecond, 200 * time.Millisecond, 2 * time.Second, 50 * time.Millisecond}
	for i := range durs {
		m.add(fmt.Sprintf("http://a.test/p%d", i), Meta{})
	}
	i := 0
	m.run(func(tk *Task) (Outcome, time.Duration) {
		if tk.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{}}, 0
		}
		d := durs[i]
		i++
		return Outcome{Result: Fetched}, d
	}, 1000)
	want := []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 800 * time.Millisecond, time.Second}
	gs := m.gaps(simKey)["http://a.test"]
	// gaps[0] follows robots.txt (0 s): the host delay.
	if len(gs) != 4 {
		t.Fatalf("gaps %v", gs)
	}
	for j, g := range gs {
		if g != want[j] {
			t.Errorf("gap %d: %v, want %v (durations %v)", j, g, want[j], durs)
		}
	}
}

// TestSimBackoff: robots.txt unavailable is asked again after RetryDelay,
// doubling, then the authority is given up (its URLs dropped, counted); a
// failing name is resolved again after RetryDelay, doubling, then dead.
func TestSimBackoff(t *testing.T) {
	m := newSim(t, Config{Settings: Settings{HostDelay: time.Millisecond, RetryDelay: time.Second, MaxRetries: 3}, DNSRetries: 2},
		map[string]netip.Addr{"a.test": netip.MustParseAddr("10.9.4.1"), "flaky.test": netip.MustParseAddr("10.9.4.2")})
	m.add("http://a.test/x", Meta{})
	m.add("http://a.test/y", Meta{})
	m.add("http://flaky.test/z", Meta{})
	var dnsAt []time.Duration
	m.dnsOK = func(host string, fails int) bool {
		if host != "flaky.test" {
			return true
		}
		dnsAt = append(dnsAt, time.Duration(m.f.now()))
		return false
	}
	m.run(func(tk *Task) (Outcome, time.Duration) {
		return Outcome{Result: RetryLater}, 0 // robots.txt: 503
	}, 1000)
	if gs := m.gaps(simKey)["http://a.test"]; fmt.Sprint(gs) != "[1s 2s 4s]" {
		t.Errorf("robots.txt asked again after %v, want [1s 2s 4s]", gs)
	}
	if n := m.f.stats.PurgedURLs.Load(); n != 2+1 {
		t.Errorf("%d URLs purged, want a.test's 2 and flaky.test's 1", n)
	}
	if len(dnsAt) != 3 || dnsAt[1]-dnsAt[0] != time.Second || dnsAt[2]-dnsAt[1] != 2*time.Second {
		t.Errorf("resolutions at %v, want 1 s then 2 s apart", dnsAt)
	}
	if m.f.stats.DNSFailures.Load() != 1 {
		t.Errorf("DNSFailures = %d", m.f.stats.DNSFailures.Load())
	}
}

// ckSink is a checkpoint sink whose sieve checkpoint takes a given time on
// the fake clock.
type ckSink struct {
	clock *clock.Manual
	takes time.Duration
	todo  [][]byte
}

func (c *ckSink) MarkReady() error { return nil }
func (c *ckSink) WriteTodo(rec []byte) error {
	c.todo = append(c.todo, append([]byte(nil), rec...))
	return nil
}
func (c *ckSink) CheckpointSieve() error { c.clock.Advance(c.takes); return nil }

// TestSimCheckpointTiming: a checkpoint's pause is measured on the
// frontier's clock, and it lists every queued URL.
func TestSimCheckpointTiming(t *testing.T) {
	m := newSim(t, Config{Settings: Settings{HostDelay: time.Second}}, map[string]netip.Addr{"a.test": netip.MustParseAddr("10.9.5.1")})
	for i := 0; i < 5; i++ {
		m.add(fmt.Sprintf("http://a.test/p%d", i), Meta{Depth: uint16(i)})
	}
	m.s.fill()
	m.resolve()
	sink := &ckSink{clock: m.clock, takes: 250 * time.Millisecond}
	info, err := m.s.checkpoint(sink)
	if err != nil {
		t.Fatal(err)
	}
	if info.Pause != 250*time.Millisecond || info.Todo != 5 || len(sink.todo) != 5 {
		t.Errorf("checkpoint %+v with %d records, want a pause of 250ms and 5 records", info, len(sink.todo))
	}
	for i, rec := range sink.todo {
		meta, url, err := SplitRecord(rec)
		if err != nil || string(url) != fmt.Sprintf("http://a.test/p%d", i) || meta.Depth != uint16(i) {
			t.Errorf("todo %d: %q %+v %v", i, url, meta, err)
		}
	}
}

// TestSimQueuedInvariant runs randomized crawls (policies, virtualization,
// failing DNS, refused and unavailable robots.txt, retries, failures,
// abandoned fetches, URLs arriving while it runs) and checks after every
// step that the queued-URL count is what the visit states hold, and at the
// end that every URL was fetched once or dropped and counted.
func TestSimQueuedInvariant(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		policy := []string{"authority", "host", "ip", "url", "domain"}[seed%5]
		assign, _ := ParseAssign(policy)
		addrs := map[string]netip.Addr{}
		for h := 0; h < 8; h++ {
			if h != 5 { // h5 never resolves
				addrs[fmt.Sprintf("h%d.d%d.test", h, h%3)] = netip.MustParseAddr(fmt.Sprintf("10.10.0.%d", 1+h%4))
			}
		}
		m := newSim(t, Config{Settings: Settings{Assign: assign, WorkbenchBytes: int64(200 + rng.IntN(2000)), FrontSize: 1 + rng.IntN(4),
			HostDelay: time.Duration(rng.IntN(50)) * time.Millisecond, IPDelay: time.Duration(rng.IntN(30)) * time.Millisecond,
			MaxRetries: 2, RetryDelay: 10 * time.Millisecond}, MaxFailures: 4, DNSRetries: 1}, addrs)
		urls := map[string]bool{}
		addURL := func() {
			h := rng.IntN(8)
			u := fmt.Sprintf("http://h%d.d%d.test/p%d", h, h%3, rng.IntN(400))
			if !urls[u] {
				urls[u] = true
				m.add(u, Meta{})
			}
		}
		for i := 0; i < 150; i++ {
			addURL()
		}
		done, failed := map[string]int{}, map[string]int{}
		m.run(func(tk *Task) (Outcome, time.Duration) {
			d := time.Duration(rng.IntN(20)) * time.Millisecond
			if rng.IntN(10) == 0 {
				addURL()
			}
			if tk.Robots {
				switch rng.IntN(12) {
				case 0:
					return Outcome{Result: RetryLater}, d
				case 1:
					return Outcome{Result: Abandoned}, d
				}
				return Outcome{Result: Fetched, Robots: allowAll{}}, d
			}
			switch rng.IntN(10) {
			case 0:
				if tk.Attempt == 2 { // MaxRetries
					failed[tk.URL()]++
				}
				return Outcome{Result: RetryLater}, d
			case 1:
				failed[tk.URL()]++
				return Outcome{Result: Failed}, d
			case 2:
				return Outcome{Result: Abandoned}, d
			}
			done[tk.URL()]++
			return Outcome{Result: Fetched}, d
		}, 200000)
		hostDelay, ipDelay := m.f.cfg.HostDelay, m.f.cfg.IPDelay
		for k, gs := range m.gaps(func(r simFetch) string { return r.task.vs.key }) {
			for _, g := range gs {
				if g < hostDelay {
					t.Fatalf("seed %d (%s): key %s: gap %v, host delay %v", seed, policy, k, g, hostDelay)
				}
			}
		}
		for a, gs := range m.gaps(simAddr) {
			for _, g := range gs {
				if g < ipDelay {
					t.Fatalf("seed %d (%s): address %s: gap %v, IP delay %v", seed, policy, a, g, ipDelay)
				}
			}
		}
		for u, n := range done {
			if n > 1 {
				t.Errorf("seed %d: %s fetched %d times", seed, u, n)
			}
		}
		st := m.f.stats
		if n := int64(len(done)+len(failed)) + st.PurgedURLs.Load() + st.AddressRefused.Load(); n != int64(len(urls)) {
			t.Errorf("seed %d (%s): %d fetched + %d failed + %d purged + %d refused, want the %d URLs", seed, policy,
				len(done), len(failed), st.PurgedURLs.Load(), st.AddressRefused.Load(), len(urls))
		}
		if q := m.s.queuedURLs; q != 0 {
			t.Errorf("seed %d (%s): %d URLs still counted as queued", seed, policy, q)
		}
		if st.InFlight.Load() != 0 || m.s.inFlight != 0 {
			t.Errorf("seed %d: tasks still in flight", seed)
		}
	}
}

// TestSimReconfigureRobotsExpiry lowers RobotsExpiry mid-crawl: the rules
// fetched before the change expire by the new value (robots.txt is asked
// again at the next dispatch), and from then on no page is dispatched
// under rules older than it.
func TestSimReconfigureRobotsExpiry(t *testing.T) {
	m := newSim(t, Config{Settings: Settings{HostDelay: time.Second, RobotsExpiry: time.Hour}},
		map[string]netip.Addr{"a.test": netip.MustParseAddr("10.9.6.1")})
	for i := 0; i < 6; i++ {
		m.add(fmt.Sprintf("http://a.test/p%d", i), Meta{})
	}
	const expiry = 1500 * time.Millisecond
	var pages int
	var changed time.Time
	m.run(func(tk *Task) (Outcome, time.Duration) {
		if tk.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{}}, time.Millisecond
		}
		if pages++; pages == 3 {
			set := *m.s.set
			set.RobotsExpiry = expiry
			m.s.reconfigure(&set)
			changed = m.clock.Now()
		}
		return Outcome{Result: Fetched}, 10 * time.Millisecond
	}, 1000)
	var robots []simFetch
	for _, r := range m.log {
		if r.robots {
			robots = append(robots, r)
			continue
		}
		last := robots[len(robots)-1]
		if r.start.After(changed) && r.start.Sub(last.end) >= expiry {
			t.Errorf("%s dispatched %v after its robots.txt ended, RobotsExpiry %v", r.url, r.start.Sub(last.end), expiry)
		}
	}
	if len(robots) < 3 || robots[1].start.Before(changed) {
		t.Fatalf("robots.txt fetched at %v (change at %v): want it again after the change", robotsStarts(m, robots), changed.Sub(m.f.base))
	}
	for i := 1; i < len(robots); i++ {
		if i > 1 && robots[i].start.Sub(robots[i-1].end) < expiry {
			t.Errorf("robots.txt asked again %v after the last one, RobotsExpiry %v", robots[i].start.Sub(robots[i-1].end), expiry)
		}
	}
}

func robotsStarts(m *sim, rs []simFetch) []time.Duration {
	var out []time.Duration
	for _, r := range rs {
		out = append(out, r.start.Sub(m.f.base))
	}
	return out
}

// TestSimReconfigureCrawlDelayCap raises CrawlDelayCap while the key waits
// out the old cap: its next request comes the new cap after its last one,
// as every one after.
func TestSimReconfigureCrawlDelayCap(t *testing.T) {
	m := newSim(t, Config{Settings: Settings{HostDelay: 100 * time.Millisecond, CrawlDelayCap: 200 * time.Millisecond}},
		map[string]netip.Addr{"a.test": netip.MustParseAddr("10.9.7.1")})
	for i := 0; i < 6; i++ {
		m.add(fmt.Sprintf("http://a.test/p%d", i), Meta{})
	}
	done := false
	m.check = func() {
		if err := m.s.checkQueued(); err != nil {
			t.Fatal(err)
		}
		if pages := len(m.log) - 1; !done && pages == 3 { // the third page released: the key waits
			done = true
			set := *m.s.set
			set.CrawlDelayCap = time.Second
			m.s.reconfigure(&set)
		}
	}
	m.run(func(tk *Task) (Outcome, time.Duration) {
		if tk.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{delay: 10 * time.Second}}, time.Millisecond
		}
		return Outcome{Result: Fetched}, 20 * time.Millisecond
	}, 1000)
	want := []time.Duration{200, 200, 200, 1000, 1000, 1000}
	gs := m.gaps(simKey)["http://a.test"]
	if len(gs) != len(want) {
		t.Fatalf("gaps %v", gs)
	}
	for i, g := range gs {
		if g != want[i]*time.Millisecond {
			t.Errorf("gap %d: %v, want %v (all %v)", i, g, want[i]*time.Millisecond, gs)
		}
	}
}
