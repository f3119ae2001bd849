package frontier

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/robots"
)

// crawlWithStore crawls perHost pages (and one /private/ page) of each of
// hosts hosts whose robots.txt disallows /private/ (host 0's is
// unavailable: it dies), with RAM holding at most cache robots.txt states
// over the store at path. It returns the harness after the crawl.
func crawlWithStore(t *testing.T, path string, hosts, perHost, cache int) *harness {
	t.Helper()
	store, err := robots.OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := store.Close(); err != nil {
			t.Error(err)
		}
	}()
	// Hosts interleave, each crawl lasting longer than the trims back off
	// (tickEvery): states leave RAM between their pages.
	set := Settings{HostDelay: 50 * time.Millisecond, MaxRetries: 1, RobotsCache: cache}
	h := newHarness(t, Config{Settings: set, Resolver: addrs(hosts, 1), RobotsStore: store})
	for i := 0; i < hosts; i++ {
		for p := 0; p < perHost; p++ {
			h.enqueue(fmt.Sprintf("http://%s/p%d", hostName(i), p))
		}
		h.enqueue(fmt.Sprintf("http://%s/private/x", hostName(i)))
	}
	rules := robots.Parse([]byte("User-agent: *\nDisallow: /private/\n"), "petrel").Rules()
	err = h.run(4, func(t *Task) Outcome {
		switch {
		case t.Robots && strings.HasPrefix(t.SchemeAuthority, "http://"+hostName(0)):
			return Outcome{Result: Fetched} // no rules: unavailable (5xx)
		case t.Robots:
			return Outcome{Result: Fetched, Robots: rules}
		}
		return Outcome{Result: Fetched}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.f.Close(); err != nil { // saves the states still in RAM
		t.Fatal(err)
	}
	return h
}

// TestRobotsStore: with RAM holding a few robots.txt states over the
// store, every authority's robots.txt is still fetched once (its rules and
// its death answered from the store in between), its rules still hold,
// and a second crawl on the same store fetches none again.
func TestRobotsStore(t *testing.T) {
	const hosts, perHost, cache = 40, 6, 4
	path := filepath.Join(t.TempDir(), "robots")
	h := crawlWithStore(t, path, hosts, perHost, cache)
	perAuthority := map[string]int{}
	for _, r := range h.log {
		if r.robots {
			perAuthority[r.key]++
		}
		if strings.Contains(r.url, "/private/") {
			t.Errorf("%s fetched: robots.txt disallows it", r.url)
		}
		if strings.Contains(r.url, hostName(0)+"/") && !r.robots {
			t.Errorf("%s fetched: its robots.txt is unavailable", r.url)
		}
	}
	for i := 0; i < hosts; i++ {
		want := 1
		if i == 0 {
			want = 2 // the fetch and its retry (MaxRetries 1)
		}
		if n := perAuthority["http://"+hostName(i)]; n != want {
			t.Errorf("%s: robots.txt fetched %d times, want %d", hostName(i), n, want)
		}
	}
	if n, want := len(h.pages()), (hosts-1)*perHost; n != want {
		t.Errorf("%d pages fetched, want %d", n, want)
	}
	if d := h.stats.RobotsDenied.Load(); d != hosts-1 {
		t.Errorf("RobotsDenied = %d, want %d", d, hosts-1)
	}
	if l := h.stats.RobotsLoaded.Load(); l == 0 {
		t.Error("no robots.txt state read back from the store: RAM held them all")
	}
	if e := h.stats.RobotsStoreErrors.Load(); e != 0 {
		t.Errorf("RobotsStoreErrors = %d", e)
	}

	// A second crawl of the same hosts, on the store the first left.
	h = crawlWithStore(t, path, hosts, perHost, cache)
	for _, r := range h.log {
		if r.robots {
			t.Errorf("robots.txt of %s fetched again: the store has it", r.key)
		}
	}
	if n, want := len(h.pages()), (hosts-1)*perHost; n != want {
		t.Errorf("second crawl: %d pages fetched, want %d", n, want)
	}
}
