package frontier

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// drops records what Config.Dropped is told.
type drops struct {
	mu   sync.Mutex
	told map[string][]DropReason
	gate chan struct{} // when set, the first call waits for it to close
	once sync.Once
}

func newDrops() *drops { return &drops{told: map[string][]DropReason{}} }

func (d *drops) fn(url string, m Meta, why DropReason) {
	if d.gate != nil {
		d.once.Do(func() { <-d.gate })
	}
	d.mu.Lock()
	d.told[url] = append(d.told[url], why)
	d.mu.Unlock()
}

// byHost counts the URLs told of per host, failing on a URL told twice
// or for another reason than want's (except, for the URLs of tried, the
// reason DropRetries).
func (d *drops) byHost(t *testing.T, want map[string]DropReason, tried map[string]bool) map[string]int {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	n := map[string]int{}
	for url, whys := range d.told {
		host := hostOf(string(schemeAuthorityOf([]byte(url))))
		w := want[host]
		if tried[url] {
			w = DropRetries
		}
		if len(whys) != 1 || whys[0] != w {
			t.Errorf("%s told %v, want once %v", url, whys, w)
		}
		n[host]++
	}
	return n
}

// TestDroppedURLsAreTold crawls hosts whose URLs the frontier gives up for
// each reason (URLs failed on every try, then their host purged after its
// failures, with URLs virtualized on disk; a name that does not resolve; a refused address; a robots.txt
// that never answers; a key over its budget) and checks that Dropped is
// told of every URL not fetched, once, with its reason, and that the
// counters agree.
func TestDroppedURLsAreTold(t *testing.T) {
	res := mapResolver{"broken.test": netip.MustParseAddr("10.6.0.1"), "inside.test": netip.MustParseAddr("127.0.0.9"),
		"norobots.test": netip.MustParseAddr("10.6.0.3"), "full.test": netip.MustParseAddr("10.6.0.4")}
	guard := func(a netip.Addr) error {
		if a.IsLoopback() {
			return errors.New("loopback refused")
		}
		return nil
	}
	d := newDrops()
	h := newHarness(t, Config{Settings: Settings{MaxRetries: 1, MaxURLsPerKey: 30, WorkbenchBytes: 2000, FrontSize: 8},
		MaxFailures: 2, Resolver: res, Guard: guard, Dropped: d.fn})
	hosts := []string{"broken.test", "nodns.test", "inside.test", "norobots.test", "full.test"}
	for i := 0; i < 30; i++ {
		for _, host := range hosts[:4] {
			h.enqueue(fmt.Sprintf("http://%s/%d", host, i))
		}
	}
	for i := 0; i < 40; i++ {
		h.enqueue(fmt.Sprintf("http://full.test/%d", i))
	}
	err := h.run(2, func(t *Task) Outcome {
		switch {
		case t.Addr == res["norobots.test"]:
			return Outcome{Result: RetryLater}
		case t.Robots:
			return Outcome{Result: Fetched, Robots: allowAll{}}
		case t.Addr == res["broken.test"]:
			return Outcome{Result: RetryLater}
		}
		return Outcome{Result: Fetched}
	})
	if err != nil {
		t.Fatal(err)
	}
	fetched := map[string]int{}
	for _, p := range h.pages() {
		fetched[hostOf(string(schemeAuthorityOf([]byte(p))))]++
	}
	tried := map[string]bool{}
	for _, p := range h.pages() {
		if strings.Contains(p, "broken.test") {
			tried[p] = true
		}
	}
	told := d.byHost(t, map[string]DropReason{"broken.test": DropBrokenHost, "nodns.test": DropDNS, "inside.test": DropAddress,
		"norobots.test": DropRobotsUnavailable, "full.test": DropOverBudget}, tried)
	// broken.test: the 2 URLs tried on every try (DropRetries), then the
	// 28 of the host purged.
	want := map[string]int{"broken.test": 30, "nodns.test": 30, "inside.test": 30, "norobots.test": 30, "full.test": 10}
	for host, n := range want {
		if told[host] != n {
			t.Errorf("%s: told of %d dropped URLs, want %d (fetched %d)", host, told[host], n, fetched[host])
		}
	}
	if fetched["full.test"] != 30 || fetched["broken.test"] != 2*2 {
		t.Errorf("fetched %v, want 30 of full.test and 2 URLs of broken.test twice", fetched)
	}
	st := h.stats
	if got, counted := int64(len(d.told)-len(tried)), st.PurgedURLs.Load()+st.AddressRefused.Load()+st.OverBudget.Load(); got != counted {
		t.Errorf("told of %d URLs, counted %d (purged %d, address refused %d, over budget %d)", got, counted,
			st.PurgedURLs.Load(), st.AddressRefused.Load(), st.OverBudget.Load())
	}
	if u := st.DropsUnlogged.Load(); u != 0 {
		t.Errorf("DropsUnlogged = %d, want 0", u)
	}
}

// TestDropDoesNotWaitForTheLog empties a visit state of thousands of URLs
// (most virtualized) with Drop while Dropped is stuck: Drop returns and
// the other host is crawled to its end meanwhile; once Dropped goes on,
// it is told of every URL of the dropped key that was not fetched.
func TestDropDoesNotWaitForTheLog(t *testing.T) {
	res := mapResolver{"big.test": netip.MustParseAddr("10.7.0.1"), "ok.test": netip.MustParseAddr("10.7.0.2")}
	d := newDrops()
	d.gate = make(chan struct{})
	h := newHarness(t, Config{Settings: Settings{HostDelay: 2 * time.Millisecond, WorkbenchBytes: 4000}, Resolver: res, Dropped: d.fn})
	const big, ok = 5000, 20
	for i := 0; i < big; i++ {
		h.enqueue(fmt.Sprintf("http://big.test/%d", i))
	}
	for i := 0; i < ok; i++ {
		h.enqueue(fmt.Sprintf("http://ok.test/%d", i))
	}
	var mu sync.Mutex
	okDone, bigStarted := 0, make(chan struct{})
	allOK := make(chan struct{})
	var startOnce sync.Once
	done := make(chan error, 1)
	go func() {
		done <- h.run(2, func(t *Task) Outcome {
			switch {
			case t.Robots:
			case t.Addr == res["big.test"]:
				startOnce.Do(func() { close(bigStarted) })
			default:
				mu.Lock()
				if okDone++; okDone == ok {
					close(allOK)
				}
				mu.Unlock()
			}
			return Outcome{Result: Fetched, Robots: allowAll{}}
		})
	}()
	<-bigStarted
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := h.f.Drop(ctx, func(key, host string, _ netip.Addr) bool { return host == "big.test" })
	if err != nil || n == 0 {
		t.Fatalf("Drop: %d, %v", n, err)
	}
	select {
	case <-allOK: // crawled while the drop log is stuck on its first URL
	case <-time.After(10 * time.Second):
		t.Fatal("ok.test was not crawled while the drop log was stuck")
	}
	close(d.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	fetchedBig := 0
	for _, p := range h.pages() {
		if strings.Contains(p, "big.test") {
			fetchedBig++
		}
	}
	told := d.byHost(t, map[string]DropReason{"big.test": DropBlocked}, nil)
	if told["big.test"]+fetchedBig != big {
		t.Errorf("big.test: %d fetched + %d told of = %d, want %d (Drop said %d)", fetchedBig, told["big.test"], fetchedBig+told["big.test"], big, n)
	}
	if u := h.stats.DropsUnlogged.Load(); u != 0 {
		t.Errorf("DropsUnlogged = %d, want 0", u)
	}
}
