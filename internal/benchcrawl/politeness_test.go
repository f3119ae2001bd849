package benchcrawl

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestJudgePoliteness checks that each run is judged by the requests that
// began while it ran, host and IP violations apart, and that a skipped
// run is not judged.
func TestJudgePoliteness(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	a, b := netip.MustParseAddr("127.1.0.1"), netip.MustParseAddr("127.1.0.2")
	hit := func(host string, ip netip.Addr, startMS, endMS int) testweb.Hit {
		return testweb.Hit{Host: host, IP: ip, Path: "/", Status: 200,
			Start: t0.Add(time.Duration(startMS) * time.Millisecond), End: t0.Add(time.Duration(endMS) * time.Millisecond)}
	}
	hits := []testweb.Hit{
		// The first run, 0–10 s: one host too soon (50 ms after the end),
		// and one other host on the same address 2 ms after (IP delay 10 ms).
		hit("x.test", a, 0, 10), hit("x.test", a, 60, 70), hit("y.test", a, 72, 80),
		// The second run, 20–30 s: polite.
		hit("x.test", a, 20000, 20010), hit("x.test", a, 20200, 20210), hit("z.test", b, 20205, 20215),
	}
	path := filepath.Join(t.TempDir(), "log.jsonl")
	w, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(w) // as testweb's WriteHitLog writes it
	for _, h := range hits {
		if err := enc.Encode(h); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	runs := []RunResult{
		{Crawler: "first", began: t0, ended: t0.Add(10 * time.Second)},
		{Crawler: "skipped", Skipped: "no tool", began: t0, ended: t0.Add(30 * time.Second)},
		{Crawler: "second", began: t0.Add(20 * time.Second), ended: t0.Add(30 * time.Second)},
	}
	if err := judgePoliteness(runs, path, 100*time.Millisecond, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	want := []*Politeness{{Requests: 3, HostViolations: 1, IPViolations: 1}, nil, {Requests: 3}}
	for i, r := range runs {
		if (r.Politeness == nil) != (want[i] == nil) || (r.Politeness != nil && *r.Politeness != *want[i]) {
			t.Errorf("%s: politeness %+v, want %+v", r.Crawler, r.Politeness, want[i])
		}
	}
	if got := runs[0].Politeness.String(); got != "1/1" {
		t.Errorf("table cell %q, want 1/1", got)
	}
}
