package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// waitConfig waits until every node is at config epoch at least e.
func waitConfig(t *testing.T, e uint64, nodes ...*Node) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, n := range nodes {
		for n.ConfigEpoch() < e {
			if time.Now().After(deadline) {
				t.Fatalf("%s at config epoch %d, want %d", n.Name(), n.ConfigEpoch(), e)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// A change is one write to etcd, applied by every agent from its watch
// under the write's revision; a value the asking agent's host refuses
// changes nothing anywhere.
func TestChangeConfigInEtcd(t *testing.T) {
	t.Parallel() // waits on leases and views more than it computes
	hs := []*testHost{newTestHost(), newTestHost(), newTestHost()}
	for _, h := range hs {
		h.guard = "host-delay"
	}
	a := mustNode(t, "a", nil, 3, hs[0])
	b := mustNode(t, "b", []string{a.cfg.Bind.String()}, 3, hs[1])
	c := mustNode(t, "c", []string{a.cfg.Bind.String()}, 3, hs[2])
	nodes := []*Node{a, b, c}
	defer func() {
		for _, n := range nodes {
			n.Close(100 * time.Millisecond)
		}
	}()
	waitReady(t, a, b, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	epoch, err := b.ChangeConfig(ctx, map[string]any{"host-delay": "300ms"})
	if err != nil || epoch == 0 {
		t.Fatalf("ChangeConfig: epoch %d, %v", epoch, err)
	}
	waitConfig(t, epoch, nodes...)
	for i, n := range nodes {
		vals, epochs := hs[i].config()
		if vals["host-delay"] != "300ms" || len(epochs) != 1 || n.ConfigEpoch() != epoch {
			t.Errorf("%s: values %v, epochs %v, node at %d", n.Name(), vals, epochs, n.ConfigEpoch())
		}
		saved, err := LoadConfigState(n.cfg.Dir)
		if err != nil || saved.Epoch != epoch || saved.Values["host-delay"] != "300ms" {
			t.Errorf("%s: saved %+v, %v", n.Name(), saved, err)
		}
	}

	// A value refused changes nothing anywhere, and the error carries the
	// reason.
	_, err = a.ChangeConfig(ctx, map[string]any{"host-delay": "bad", "ip-delay": "1s"})
	if err == nil || !strings.Contains(err.Error(), "refused by agent a") || !strings.Contains(err.Error(), `"bad" is not a duration (agent a)`) {
		t.Fatalf("a refused change: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	for i, n := range nodes {
		vals, epochs := hs[i].config()
		if vals["host-delay"] != "300ms" || vals["ip-delay"] != nil || len(epochs) != 1 || n.ConfigEpoch() != epoch {
			t.Errorf("%s after the refusal: values %v, epochs %v, node at %d", n.Name(), vals, epochs, n.ConfigEpoch())
		}
	}

	// The next change carries every value changed so far.
	next, err := c.ChangeConfig(ctx, map[string]any{"ip-delay": "1s"})
	if err != nil || next <= epoch {
		t.Fatalf("change after a refusal: epoch %d, %v", next, err)
	}
	waitConfig(t, next, nodes...)
	for i, n := range nodes {
		vals, _ := hs[i].config()
		if vals["host-delay"] != "300ms" || vals["ip-delay"] != "1s" {
			t.Errorf("%s: values %v", n.Name(), vals)
		}
	}
	if errors.Is(err, ErrConfigConflict) {
		t.Fatal(err)
	}
}
