package frontier

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/sieve"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

func TestParseAssign(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"", "authority", true}, {"authority", "authority", true}, {"host", "host", true},
		{"domain", "domain", true}, {"url", "url", true}, {"bucket:7", "bucket:7", true},
		{"ip", "ip", true}, {"bucket:0", "", false}, {"bucket:x", "", false}, {"random", "", false},
	} {
		a, err := ParseAssign(c.in)
		if (err == nil) != c.ok {
			t.Errorf("ParseAssign(%q) error %v, want ok=%v", c.in, err, c.ok)
			continue
		}
		if c.ok && a.String() != c.want {
			t.Errorf("ParseAssign(%q) = %s, want %s", c.in, a, c.want)
		}
	}
}

func TestAssignKeys(t *testing.T) {
	key := func(policy, raw string) string {
		a, err := ParseAssign(policy)
		if err != nil {
			t.Fatal(err)
		}
		u, err := urlx.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		url := []byte(u.String())
		k, n := a.key([]byte(u.SchemeAuthority()), url)
		if !equalPrefix(string(url), n) {
			t.Fatalf("prefix length %d out of range", n)
		}
		return k
	}
	same := []struct{ policy, a, b string }{
		{"authority", "http://a.test/x", "http://a.test/y"},
		{"host", "http://a.test/x", "https://a.test:8443/y"},
		{"domain", "http://a.b.example.co.uk/", "http://c.example.co.uk/z"},
		{"bucket:1", "http://a.test/", "http://b.test/"},
	}
	for _, c := range same {
		if ka, kb := key(c.policy, c.a), key(c.policy, c.b); ka != kb {
			t.Errorf("%s: %s and %s have keys %q and %q, want one key", c.policy, c.a, c.b, ka, kb)
		}
	}
	differ := []struct{ policy, a, b string }{
		{"authority", "http://a.test/", "https://a.test/"},
		{"host", "http://a.test/", "http://b.a.test/"},
		{"domain", "http://example.co.uk/", "http://other.co.uk/"},
		{"url", "http://a.test/x", "http://a.test/y"},
	}
	for _, c := range differ {
		if ka, kb := key(c.policy, c.a), key(c.policy, c.b); ka == kb {
			t.Errorf("%s: %s and %s share key %q", c.policy, c.a, c.b, ka)
		}
	}
	// Deterministic: the same URL always gets the same key.
	for i := 0; i < 100; i++ {
		if key("bucket:13", "http://h.test/") != key("bucket:13", "http://h.test/") {
			t.Fatal("bucket key is not deterministic")
		}
	}
}

func equalPrefix(s string, n int) bool { return n >= 0 && n <= len(s) }

// concurrency runs one host's crawl with 50 fetchers and slow fetches, and
// returns the most requests ever in flight together.
func concurrency(t *testing.T, cfg Config) int {
	var fl inFlight
	cfg.Resolver = mapResolver{"one.test": netip.MustParseAddr("10.1.1.1")}
	h := newHarness(t, cfg)
	for i := 0; i < 200; i++ {
		h.enqueue(fmt.Sprintf("http://one.test/p%d", i))
	}
	err := h.run(50, func(t *Task) Outcome {
		if t.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{}}
		}
		fl.fetch(5 * time.Millisecond)
		return Outcome{Result: Fetched}
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(h.pages()); n != 200 {
		t.Fatalf("%d pages fetched, want 200", n)
	}
	return fl.peak
}

// TestFiftyFetchersOneHost reproduces the Heritrix note's scenario: one
// host, 50 fetchers. With the default policy exactly one request is ever in
// flight; with every URL its own key and the IP rule raised to 50, about
// fifty are.
func TestFiftyFetchersOneHost(t *testing.T) {
	if p := concurrency(t, Config{}); p != 1 {
		t.Errorf("default policy: %d requests in flight at once, want exactly 1", p)
	}
	url, _ := ParseAssign("url")
	if p := concurrency(t, Config{Settings: Settings{Assign: url, ParallelPerIP: 50}}); p < 40 {
		t.Errorf("--assign url --parallel-per-ip 50: at most %d requests in flight, want about 50", p)
	}
}

// TestAdaptiveDelay checks --delay-factor: after a fetch that took d, the
// next request to the key waits factor×d (clamped to MaxDelay).
func TestAdaptiveDelay(t *testing.T) {
	h := newHarness(t, Config{Settings: Settings{HostDelay: time.Millisecond, DelayFactor: 4, MaxDelay: time.Second}, Resolver: mapResolver{"slow.test": netip.MustParseAddr("10.2.2.2")}})
	for i := 0; i < 5; i++ {
		h.enqueue(fmt.Sprintf("http://slow.test/p%d", i))
	}
	err := h.run(2, func(t *Task) Outcome {
		if t.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{}}
		}
		start := time.Now()
		time.Sleep(10 * time.Millisecond)
		return Outcome{Result: Fetched, Duration: time.Since(start)}
	})
	if err != nil {
		t.Fatal(err)
	}
	var pages []fetchRecord
	for _, r := range h.log {
		if !r.robots {
			pages = append(pages, r)
		}
	}
	for i := 1; i < len(pages); i++ {
		if gap := pages[i].start.Sub(pages[i-1].end); gap < 40*time.Millisecond {
			t.Errorf("gap %v after a 10ms fetch with factor 4, want ≥ 40ms", gap)
		}
	}
}

// TestRetryAfterAndCrawlDelay checks that a 429/503 Retry-After and a
// robots.txt Crawl-delay (capped) push the next request back.
func TestRetryAfterAndCrawlDelay(t *testing.T) {
	h := newHarness(t, Config{Settings: Settings{HostDelay: time.Millisecond, MaxDelay: time.Second, CrawlDelayCap: 30 * time.Millisecond, MaxRetries: 1}, Resolver: mapResolver{"busy.test": netip.MustParseAddr("10.3.3.3")}})
	h.enqueue("http://busy.test/a")
	h.enqueue("http://busy.test/b")
	var calls atomic.Int32
	err := h.run(2, func(t *Task) Outcome {
		if t.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{delay: time.Hour}}
		}
		if t.PathQuery == "/a" && calls.Add(1) == 1 {
			return Outcome{Result: RetryLater, RetryAfter: 80 * time.Millisecond}
		}
		return Outcome{Result: Fetched}
	})
	if err != nil {
		t.Fatal(err)
	}
	var pages []fetchRecord
	for _, r := range h.log {
		if !r.robots {
			pages = append(pages, r)
		}
	}
	if len(pages) != 3 {
		t.Fatalf("%d page fetches, want 3 (a, a retried, b)", len(pages))
	}
	if gap := pages[1].start.Sub(pages[0].end); gap < 80*time.Millisecond {
		t.Errorf("gap after Retry-After 80ms: %v", gap)
	}
	// A lower bound only, which a loaded machine cannot break: that the
	// cap holds the delay to 30 ms exactly is TestSimCrawlDelay's, on a
	// fake clock.
	if gap := pages[2].start.Sub(pages[1].end); gap < 30*time.Millisecond {
		t.Errorf("gap with Crawl-delay 1h capped at 30ms: %v", gap)
	}
	if h.stats.Retries.Load() != 1 {
		t.Errorf("Retries = %d, want 1", h.stats.Retries.Load())
	}
}

// TestBrokenHostPurged checks that a host whose fetches keep failing is
// purged after MaxFailures URLs, its URLs counted, the others crawled.
func TestBrokenHostPurged(t *testing.T) {
	res := mapResolver{"dead.test": netip.MustParseAddr("10.4.4.4"), "ok.test": netip.MustParseAddr("10.4.4.5")}
	h := newHarness(t, Config{Settings: Settings{MaxRetries: 1}, MaxFailures: 3, Resolver: res})
	for i := 0; i < 20; i++ {
		h.enqueue(fmt.Sprintf("http://dead.test/%d", i))
		h.enqueue(fmt.Sprintf("http://ok.test/%d", i))
	}
	h.enqueue("http://nowhere.test/")
	err := h.run(4, func(t *Task) Outcome {
		if t.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{}}
		}
		if t.Addr == res["dead.test"] {
			return Outcome{Result: RetryLater}
		}
		return Outcome{Result: Fetched}
	})
	if err != nil {
		t.Fatal(err)
	}
	dead := 0
	ok := 0
	for _, u := range h.pages() {
		if u[7:11] == "dead" {
			dead++
		} else {
			ok++
		}
	}
	if ok != 20 {
		t.Errorf("ok.test: %d pages, want 20", ok)
	}
	if dead != 6 { // 3 URLs, each tried twice (1 retry)
		t.Errorf("dead.test: %d attempts, want 6", dead)
	}
	if b := h.stats.BrokenKeys.Load(); b != 2 {
		t.Errorf("BrokenKeys = %d, want 2 (dead.test, and nowhere.test which did not resolve)", b)
	}
	if p := h.stats.PurgedURLs.Load(); p != 17+1 {
		t.Errorf("PurgedURLs = %d, want 18 (17 of dead.test, 1 of nowhere.test)", p)
	}
	if d := h.stats.DNSFailures.Load(); d != 1 {
		t.Errorf("DNSFailures = %d, want 1", d)
	}
}

// TestPerKeyBudget checks --max-urls-per-host at enqueue.
func TestPerKeyBudget(t *testing.T) {
	h := newHarness(t, Config{Settings: Settings{MaxURLsPerKey: 10}, Resolver: addrs(2, 1)})
	for i := 0; i < 100; i++ {
		h.enqueue(fmt.Sprintf("http://%s/%d", hostName(0), i))
	}
	h.enqueue(fmt.Sprintf("http://%s/x", hostName(1)))
	if err := h.run(4, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(h.pages()); n != 11 {
		t.Errorf("%d pages fetched, want 10 + 1", n)
	}
	if o := h.stats.OverBudget.Load(); o != 90 {
		t.Errorf("OverBudget = %d, want 90", o)
	}
}

// TestRobotsAndAddressGuard checks robots denials and refused addresses.
func TestRobotsAndAddressGuard(t *testing.T) {
	res := mapResolver{"r.test": netip.MustParseAddr("10.5.5.5"), "inside.test": netip.MustParseAddr("127.0.0.9")}
	guard := func(a netip.Addr) error {
		if a.IsLoopback() {
			return errors.New("loopback refused")
		}
		return nil
	}
	h := newHarness(t, Config{Resolver: res, Guard: guard})
	for i := 0; i < 5; i++ {
		h.enqueue(fmt.Sprintf("http://r.test/private/%d", i))
		h.enqueue(fmt.Sprintf("http://r.test/public/%d", i))
		h.enqueue(fmt.Sprintf("http://inside.test/%d", i))
	}
	err := h.run(2, func(t *Task) Outcome {
		if t.Robots {
			return Outcome{Result: Fetched, Robots: denyPrefix("/private/")}
		}
		return Outcome{Result: Fetched}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range h.log {
		if r.addr.IsLoopback() {
			t.Errorf("refused address dialled for %s", r.url)
		}
	}
	if n := len(h.pages()); n != 5 {
		t.Errorf("%d pages, want the 5 public ones", n)
	}
	if d := h.stats.RobotsDenied.Load(); d != 5 {
		t.Errorf("RobotsDenied = %d, want 5", d)
	}
	if a := h.stats.AddressRefused.Load(); a != 5 {
		t.Errorf("AddressRefused = %d, want 5", a)
	}
}

// TestMaxURLsAndMeta checks the fetch limit and that Meta travels from
// Enqueue to the Task.
func TestMaxURLsAndMeta(t *testing.T) {
	h := newHarness(t, Config{Settings: Settings{MaxURLs: 7}, Resolver: addrs(3, 1)})
	for i := 0; i < 30; i++ {
		u, _ := urlx.Parse(fmt.Sprintf("http://%s/%d", hostName(i%3), i))
		if err := h.f.Enqueue(u, Meta{Depth: uint16(i), Redirects: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.run(3, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(h.pages()); n != 7 {
		t.Errorf("%d pages, want 7", n)
	}
	for _, r := range h.log {
		if r.robots {
			continue
		}
		var i int
		fmt.Sscanf(r.url[len("http://"+hostName(0)+"/"):], "%d", &i)
		if r.meta != (Meta{Depth: uint16(i), Redirects: 2}) {
			t.Errorf("%s: meta %+v", r.url, r.meta)
		}
	}
}

// TestMaxURLsIdleWithUntil checks that a frontier that waits for Until (an
// agent of a crawl of several) reports itself idle once MaxURLs pages are
// fetched, though URLs are left in its ready queue: the crawl's end
// (termination detection) waits for every agent to be idle.
func TestMaxURLsIdleWithUntil(t *testing.T) {
	until := make(chan struct{})
	// Thirty hosts and a front of one: most URLs are still in the ready
	// queue when the limit is reached.
	h := newHarness(t, Config{Settings: Settings{MaxURLs: 5, FrontSize: 1}, Resolver: addrs(30, 1), Until: until})
	for i := 0; i < 30; i++ {
		h.enqueue(fmt.Sprintf("http://%s/%d", hostName(i), i))
	}
	idle := make(chan bool, 1)
	go func() {
		defer close(until)
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if h.f.Idle() {
				idle <- true
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		idle <- false
	}()
	if err := h.run(3, nil); err != nil {
		t.Fatal(err)
	}
	if !<-idle {
		t.Fatal("the frontier at its MaxURLs never reported itself idle")
	}
	if n := len(h.pages()); n != 5 {
		t.Errorf("%d pages, want 5", n)
	}
	if h.f.cfg.Ready.Len() == 0 {
		t.Error("nothing left in the ready queue: the test shows nothing")
	}
}

// TestSameURLDifferentMeta checks that a URL enqueued again with another
// Meta (found at another depth) is still fetched once, with the first Meta.
func TestSameURLDifferentMeta(t *testing.T) {
	h := newHarness(t, Config{Resolver: addrs(1, 1), Cache: nil})
	u, _ := urlx.Parse("http://" + hostName(0) + "/same")
	for d := 1; d <= 5; d++ {
		if err := h.f.Enqueue(u, Meta{Depth: uint16(d)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.run(2, nil); err != nil {
		t.Fatal(err)
	}
	var got []fetchRecord
	for _, r := range h.log {
		if !r.robots {
			got = append(got, r)
		}
	}
	if len(got) != 1 || got[0].meta.Depth != 1 {
		t.Fatalf("fetches %+v, want one with depth 1", got)
	}
}

// TestIPPolicy checks --assign ip: hosts on one address share one visit
// state (so the host delay holds across them), every URL is fetched once,
// and a host that does not resolve loses its parked URLs, counted.
func TestIPPolicy(t *testing.T) {
	ip, _ := ParseAssign("ip")
	res := mapResolver{"a.test": netip.MustParseAddr("10.9.0.1"), "b.test": netip.MustParseAddr("10.9.0.1"),
		"c.test": netip.MustParseAddr("10.9.0.2")}
	h := newHarness(t, Config{Settings: Settings{Assign: ip, HostDelay: 5 * time.Millisecond}, Resolver: res})
	for i := 0; i < 10; i++ {
		for _, host := range []string{"a.test", "b.test", "c.test", "gone.test"} {
			h.enqueue(fmt.Sprintf("http://%s/%d", host, i))
		}
	}
	if err := h.run(8, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(h.pages()); n != 30 {
		t.Errorf("%d pages, want 30", n)
	}
	// a.test and b.test share 10.9.0.1: one queue, so 5ms between any two.
	h.checkGaps(func(r fetchRecord) string { return r.addr.String() }, 5*time.Millisecond)
	if p := h.stats.PurgedURLs.Load(); p != 10 {
		t.Errorf("PurgedURLs = %d, want the 10 of gone.test", p)
	}
	robots := 0
	for _, r := range h.log {
		if r.robots {
			robots++
		}
	}
	if robots != 3 {
		t.Errorf("%d robots.txt fetches, want one per authority (3)", robots)
	}
}

// TestMultiHostKeyKeepsIPRule checks that with a policy grouping hosts of
// different addresses in one visit state (domain), every address still
// gets the IP rule: a.shop.test shares 10.8.0.2 with other.test, whose own
// visit state is separate.
func TestMultiHostKeyKeepsIPRule(t *testing.T) {
	domain, _ := ParseAssign("domain")
	res := mapResolver{"www.shop.test": netip.MustParseAddr("10.8.0.1"), "a.shop.test": netip.MustParseAddr("10.8.0.2"),
		"other.test": netip.MustParseAddr("10.8.0.2")}
	h := newHarness(t, Config{Settings: Settings{Assign: domain, HostDelay: time.Millisecond, IPDelay: 4 * time.Millisecond}, Resolver: res})
	for i := 0; i < 15; i++ {
		for _, host := range []string{"www.shop.test", "a.shop.test", "other.test"} {
			h.enqueue(fmt.Sprintf("http://%s/%d", host, i))
		}
	}
	err := h.run(8, func(t *Task) Outcome {
		if t.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{}}
		}
		time.Sleep(time.Millisecond)
		return Outcome{Result: Fetched}
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(h.pages()); n != 45 {
		t.Errorf("%d pages, want 45", n)
	}
	h.checkGaps(func(r fetchRecord) string { return r.addr.String() }, 4*time.Millisecond)
}

// blockingResolver never answers before its context ends.
type blockingResolver struct{}

func (blockingResolver) Lookup(ctx context.Context, _ string) ([]netip.Addr, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestCloseSavesEverything stops a frontier whose URLs are all waiting
// (parked on hosts that do not resolve yet, with the ip policy) and checks
// that Close puts every one of them back in the ready queue.
func TestCloseSavesEverything(t *testing.T) {
	ip, _ := ParseAssign("ip")
	h := newHarness(t, Config{Settings: Settings{Assign: ip}, Resolver: blockingResolver{}})
	for i := 0; i < 30; i++ {
		h.enqueue(fmt.Sprintf("http://%s/%d", hostName(i%3), i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.f.Run(ctx) }()
	go func() {
		for t := range h.f.Todo() {
			h.f.Done(Outcome{Task: t, Result: Abandoned})
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	// Until the sieve has let them all through and the distributor has
	// taken them all from the ready queue (to park them).
	for (h.stats.SieveNew.Load() < 30 || h.f.cfg.Ready.Len() > 0) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if h.stats.SieveNew.Load() < 30 || h.f.cfg.Ready.Len() > 0 {
		t.Fatal("the URLs never left the ready queue")
	}
	cancel()
	<-done
	if err := h.f.Close(); err != nil {
		t.Fatal(err)
	}
	if n := h.f.cfg.Ready.Len(); n != 30 {
		t.Fatalf("%d URLs in the ready queue after Close, want all 30", n)
	}
}

// TestEnqueueAll checks that EnqueueAll decides as Enqueue one URL at a
// time does: repeats caught by the URL cache, the per-key budget, one fetch
// per URL.
func TestEnqueueAll(t *testing.T) {
	var urls []urlx.URL
	for i := range 60 {
		u, err := urlx.Parse(fmt.Sprintf("http://%s/%d", hostName(i%2), i%25)) // 25 distinct paths per host, repeats
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, u)
	}
	var got [2][]string
	var counts [2][4]int64
	for mode := range 2 {
		h := newHarness(t, Config{Settings: Settings{MaxURLsPerKey: 10}, Resolver: addrs(2, 1), Cache: sieve.NewURLCache(1 << 12), Hash: sieve.Hash})
		if mode == 0 {
			for _, u := range urls {
				if err := h.f.Enqueue(u, Meta{}); err != nil {
					t.Fatal(err)
				}
			}
		} else {
			// In two calls: the second reuses the first's pooled buffers.
			for _, part := range [][]urlx.URL{urls[:37], urls[37:]} {
				if err := h.f.EnqueueAll(part, Meta{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := h.run(4, nil); err != nil {
			t.Fatal(err)
		}
		got[mode] = h.pages()
		slices.Sort(got[mode])
		st := h.stats
		counts[mode] = [4]int64{st.Enqueued.Load(), st.CacheHits.Load(), st.OverBudget.Load(), st.SieveEnqueued.Load()}
	}
	if !slices.Equal(got[0], got[1]) {
		t.Errorf("pages fetched: Enqueue %v, EnqueueAll %v", got[0], got[1])
	}
	if counts[0] != counts[1] {
		t.Errorf("enqueued, cache hits, over budget, sieved: Enqueue %v, EnqueueAll %v", counts[0], counts[1])
	}
	if len(got[1]) != 20 || counts[1][0] != 60 || counts[1][1] == 0 {
		t.Errorf("%d pages (want 10 per host), counts %v", len(got[1]), counts[1])
	}
}
