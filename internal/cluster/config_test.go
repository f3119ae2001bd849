package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"
)

// configHost is a testHost whose cluster-wide values can change: it
// refuses a value of "bad" for the setting it is told to guard.
type configHost struct {
	*testHost
	name   string
	guard  string // setting whose value "bad" this host refuses
	assign string // this agent's own --assign ("" : authority), which a commit leaves
	mu     sync.Mutex
	values map[string]any
	epochs []uint64
}

func (h *configHost) PrepareConfig(values map[string]any) error {
	if values[h.guard] == "bad" {
		return fmt.Errorf("--%s: %q is not a duration (agent %s)", h.guard, values[h.guard], h.name)
	}
	return nil
}

func (h *configHost) CommitConfig(_ context.Context, epoch uint64, values map[string]any) ([][2]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.values = maps.Clone(values)
	h.epochs = append(h.epochs, epoch)
	assign := cmp.Or(h.assign, "authority")
	return [][2]string{{"assign", assign}, {"host-delay", fmt.Sprint(values["host-delay"])}}, nil
}

func (h *configHost) state() (map[string]any, []uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.values), append([]uint64(nil), h.epochs...)
}

func TestChangeConfigAllOrNothing(t *testing.T) {
	hs := []*configHost{}
	for _, name := range []string{"a", "b", "c"} {
		hs = append(hs, &configHost{testHost: newTestHost(), name: name, guard: "host-delay"})
	}
	hs[0].guard = "none" // a accepts anything: the refusal must come from a member
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

	// A change asked of b is in force on every agent, under epoch 1.
	epoch, err := b.ChangeConfig(ctx, map[string]any{"host-delay": "300ms"})
	if err != nil || epoch != 1 {
		t.Fatalf("ChangeConfig: epoch %d, %v", epoch, err)
	}
	for i, n := range nodes {
		vals, epochs := hs[i].state()
		if vals["host-delay"] != "300ms" || len(epochs) != 1 || n.ConfigEpoch() != 1 {
			t.Errorf("%s: values %v, epochs %v, node at %d", n.Name(), vals, epochs, n.ConfigEpoch())
		}
		saved, err := LoadConfigState(n.cfg.Dir)
		if err != nil || saved.Epoch != 1 || saved.Values["host-delay"] != "300ms" {
			t.Errorf("%s: saved %+v, %v", n.Name(), saved, err)
		}
	}

	// A value one member refuses changes nothing anywhere, and the error
	// carries the member's reason.
	_, err = a.ChangeConfig(ctx, map[string]any{"host-delay": "bad", "ip-delay": "1s"})
	if err == nil || !strings.Contains(err.Error(), "refused by agent b") || !strings.Contains(err.Error(), `"bad" is not a duration (agent b)`) {
		t.Fatalf("a refused change: %v", err)
	}
	for i, n := range nodes {
		vals, epochs := hs[i].state()
		if vals["host-delay"] != "300ms" || vals["ip-delay"] != nil || len(epochs) != 1 || n.ConfigEpoch() != 1 {
			t.Errorf("%s after the refusal: values %v, epochs %v, node at %d", n.Name(), vals, epochs, n.ConfigEpoch())
		}
	}

	// The promises of the refused change were released: the next change
	// goes through at once, with every value changed so far.
	if epoch, err = c.ChangeConfig(ctx, map[string]any{"ip-delay": "1s"}); err != nil || epoch != 2 {
		t.Fatalf("change after a refusal: epoch %d, %v", epoch, err)
	}
	for i, n := range nodes {
		vals, _ := hs[i].state()
		if vals["host-delay"] != "300ms" || vals["ip-delay"] != "1s" {
			t.Errorf("%s: values %v", n.Name(), vals)
		}
	}

	// An agent compared later is compared against the current values.
	rep, err := c.hello(ctx, a.cfg.ExchangeAddr())
	if err != nil || !rep.OK || rep.ConfigEpoch != 2 {
		t.Errorf("hello with the current values: %+v, %v", rep, err)
	}
	d := FirstDifference(a.helloSettings(), [][2]string{{"assign", "authority"}, {"host-delay", "120ms"}})
	if !strings.Contains(d, `setting host-delay: the crawl has "300ms", the joining agent "120ms"`) {
		t.Errorf("difference with the old values: %q", d)
	}

	// With a member gone, nothing can change.
	c.Close(100 * time.Millisecond)
	nodes = nodes[:2]
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err = a.ChangeConfig(ctx, map[string]any{"ip-delay": "2s"})
		if err != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // c's leave is not yet known
	}
	if err == nil || !strings.Contains(err.Error(), "agent c") {
		t.Errorf("change with a member gone: %v", err)
	}
	if errors.Is(err, ErrConfigConflict) {
		t.Errorf("a member gone is not a conflict: %v", err)
	}
}
