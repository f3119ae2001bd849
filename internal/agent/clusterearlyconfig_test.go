package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCommitBeforeRun checks a cluster-wide change committed before Run's
// loops start (an agent catching up at hello): the frontier, the settings
// in force and state/ all hold it at once, a bad value
// changes nothing, the crawl then runs under it (no gap under the new
// host-delay in the server's own log), and once the loops run the change
// is left to the control loop.
func TestCommitBeforeRun(t *testing.T) {
	c := newTestCrawl(t, "127.84.9.1", 2, 4, nil)
	if _, _, err := c.a.commitBeforeRun(map[string]any{"host-delay": "-1s"}, nil, false); err == nil {
		t.Fatal("a negative host-delay was committed")
	}
	diff, ok, err := c.a.commitBeforeRun(map[string]any{"host-delay": "250ms"}, nil, false)
	if !ok || err != nil || len(diff) != 1 || diff[0].Name != "host-delay" {
		t.Fatalf("commit before Run: ok %v, changes %v, %v", ok, diff, err)
	}
	if d := c.a.frontier.Settings().HostDelay; d != 250*time.Millisecond {
		t.Errorf("frontier host-delay %v, want 250ms", d)
	}
	if v := c.a.Settings()["host-delay"]; v != "250ms" {
		t.Errorf("settings in force: host-delay %v", v)
	}
	if b, err := os.ReadFile(filepath.Join(c.cfg.Dir, "state", liveFile)); err != nil || !strings.Contains(string(b), `"host-delay": "250ms"`) {
		t.Errorf("saved live settings: %s, %v", b, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	hits := c.web.Hits()
	if len(hits) < 8 || hasGapUnder(hits, 250*time.Millisecond) {
		t.Errorf("%d hits, gap under the committed 250ms host-delay: %v", len(hits), hasGapUnder(hits, 250*time.Millisecond))
	}
	if _, ok, _ := c.a.commitBeforeRun(map[string]any{"host-delay": "300ms"}, nil, false); ok {
		t.Error("a commit after the loops started did not go to the control loop")
	}
}
