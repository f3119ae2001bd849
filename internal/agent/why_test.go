package agent

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/console"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestNeverSeenFlushCaveat: a never-seen answer says a sieve flush may
// hide the URL only while one is under way; a sieve buffer that is merely
// not empty was searched, and says nothing.
func TestNeverSeenFlushCaveat(t *testing.T) {
	for _, flushing := range []bool{false, true} {
		var w console.Why
		neverSeen(&w, flushing)
		if w.State != console.WhyNeverSeen {
			t.Errorf("flushing %v: state %q, want never-seen", flushing, w.State)
		}
		said := strings.Contains(strings.Join(w.Caveats, "\n"), "flush")
		if said != flushing {
			t.Errorf("flushing %v: caveats %q: speak of a flush %v, want %v", flushing, w.Caveats, said, flushing)
		}
	}
}

// TestWhyNeverSeenWithKeysInTheSieve: while the sieve's buffer holds keys
// and no flush runs (the crawl has URLs queued, so none is wanted yet), a
// URL no part of the crawl knows is answered never-seen without the
// caveat of a flush; one waiting in the buffer is answered in-sieve.
func TestWhyNeverSeenWithKeysInTheSieve(t *testing.T) {
	w, dir, hostsFile, seeds := startTestWeb(t, testweb.Config{Hosts: 1, HostsPerIP: 1, PagesPerHost: 200, Seed: 9,
		FirstIP: netip.MustParseAddr("127.61.12.40")})
	cfg := testConfig(filepath.Join(dir, "crawl"), hostsFile, seeds)
	a, err := Open(cfg, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	until := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 30 s", what)
			}
		}
	}
	until("pages fetched and their links queued", func() bool { return a.stats.Fetched.Load() >= 20 && a.stats.Queued.Load() >= 8 })
	// The host waits an hour from now on: the queue stays as it is.
	if _, err := a.Reconfigure(ctx, map[string]any{"host-delay": "1h"}); err != nil {
		t.Fatal(err)
	}
	until("the fetches in flight ended", func() bool { return a.stats.InFlight.Load() == 0 })
	flushing := func() bool {
		_, _, pending, err := a.sieve.Contains(append(frontier.Meta{}.Append(nil), "http://probe.test/"...))
		if err != nil {
			t.Fatal(err)
		}
		return pending
	}
	// The scheduler may flush the sieve at any moment (its fetchers wait):
	// an attempt counts only if no flush was under way at its start or
	// end and the URL offered in it is still in the buffer at its end.
	host := strings.TrimSuffix(w.Seeds()[0], "/")
	for attempt := range 20 {
		offered := fmt.Sprintf("%s/offered-while-waiting-%d.html", host, attempt)
		if res := a.AddSeeds([]string{offered}); len(res) != 1 || !res[0].Accepted {
			t.Fatalf("AddSeeds: %+v", res)
		}
		before := flushing()
		never, err := a.whyHere(ctx, host+"/never-offered.html")
		if err != nil {
			t.Fatal(err)
		}
		waiting, err := a.whyHere(ctx, offered)
		if err != nil {
			t.Fatal(err)
		}
		if before || flushing() || waiting.State != console.WhyInSieve {
			continue // a flush came between: try again
		}
		if never.State != console.WhyNeverSeen || strings.Contains(strings.Join(never.Caveats, "\n"), "flush") {
			t.Errorf("why of a URL never offered, no flush running: %s %q, want never-seen without a flush caveat", never.State, never.Caveats)
		}
		return
	}
	t.Fatal("in 20 attempts a sieve flush always came between: the test proves nothing")
}
