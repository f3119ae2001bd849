package cluster

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestHelloCatchesUpMissedConfig restarts an agent that was down when the
// crawl committed a config epoch: instead of being refused at hello (the
// others compare the newer values), it takes the committed values from a
// peer, saves them, and joins. A difference the crawl's values do not
// explain is still refused.
func TestHelloCatchesUpMissedConfig(t *testing.T) {
	busy := func(name string) *configHost { // busy: the crawl does not end meanwhile
		h := &configHost{testHost: newTestHost(), name: name, guard: "none"}
		h.busy.Store(true)
		return h
	}
	ha := busy("a")
	a := mustNode(t, "a", nil, 2, ha)
	defer a.Close(100 * time.Millisecond)
	join := []string{a.cfg.Bind.String()}
	b, err := startNode(t, "b", testKey, join, 2, busy("b"), [][2]string{{"assign", "authority"}})
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, a, b)
	bcfg := b.cfg
	b.Close(100 * time.Millisecond)

	// The crawl commits epoch 1 while b is down (the commit b missed).
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.commitConfig(ctx, ConfigState{Epoch: 1, Values: map[string]any{"host-delay": "300ms"}}); err != nil {
		t.Fatal(err)
	}

	// b restarts on its directory with its old command line.
	hb := busy("b")
	b, err = startNode(t, "b", testKey, join, 2, hb, [][2]string{{"assign", "authority"}}, func(c *Config) {
		c.Dir, c.FinishedPath, c.Bind = bcfg.Dir, bcfg.FinishedPath, bcfg.Bind
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(100 * time.Millisecond)
	if _, err := b.WaitReady(ctx); err != nil {
		t.Fatalf("restarted b: %v, want it to catch up and join", err)
	}
	vals, epochs := hb.state()
	if vals["host-delay"] != "300ms" || len(epochs) != 1 || epochs[0] != 1 || b.ConfigEpoch() != 1 {
		t.Errorf("restarted b: host values %v, epochs %v, node at %d; want host-delay 300ms under epoch 1", vals, epochs, b.ConfigEpoch())
	}
	if saved, err := LoadConfigState(bcfg.Dir); err != nil || saved.Epoch != 1 || saved.Values["host-delay"] != "300ms" {
		t.Errorf("restarted b saved %+v, %v", saved, err)
	}

	// An agent whose own command line differs is refused, caught up or not.
	hc := busy("c")
	hc.assign = "host"
	c, err := startNode(t, "c", testKey, join, 2, hc, [][2]string{{"assign", "host"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(100 * time.Millisecond)
	cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer ccancel()
	_, err = c.WaitReady(cctx)
	if err == nil || !strings.Contains(err.Error(), "setting assign") {
		t.Errorf("c with another --assign: %v, want refused naming assign", err)
	}
}
