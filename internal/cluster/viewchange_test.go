package cluster

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// viewHost is a testHost that records the view changes it is told of.
type viewHost struct {
	*testHost
	mu      sync.Mutex
	changes []string // "old -> new"
}

func (h *viewHost) ViewChanged(old, new *View) {
	h.mu.Lock()
	h.changes = append(h.changes, old.String()+" -> "+new.String())
	h.mu.Unlock()
}

func (h *viewHost) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.changes...)
}

func TestProposeViewInstallsEverywhere(t *testing.T) {
	hs := []*viewHost{{testHost: newTestHost()}, {testHost: newTestHost()}, {testHost: newTestHost()}}
	a := mustNode(t, "a", nil, 3, hs[0])
	b := mustNode(t, "b", []string{a.cfg.Bind.String()}, 3, hs[1])
	c := mustNode(t, "c", []string{a.cfg.Bind.String()}, 3, hs[2])
	defer func() {
		for _, n := range []*Node{a, b, c} {
			n.Close(100 * time.Millisecond)
		}
	}()
	waitReady(t, a, b, c)
	if got := b.Coordinator(); got != "a" {
		t.Fatalf("coordinator %q, want a", got)
	}
	next, err := NextView(a.View(), nil, "c")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.ProposeView(ctx, next, "c leaves"); err != nil {
		t.Fatal(err)
	}
	want := "epoch 1: a, b, c -> epoch 2: a, b"
	for i, n := range []*Node{a, b, c} {
		if n.View().String() != "epoch 2: a, b" {
			t.Errorf("%s holds %s", n.Name(), n.View())
		}
		if got := hs[i].seen(); len(got) != 1 || got[0] != want {
			t.Errorf("%s was told %q, want [%q]", n.Name(), got, want)
		}
		v, err := loadView(filepath.Join(n.cfg.Dir, "view.json"))
		if err != nil || v.String() != "epoch 2: a, b" {
			t.Errorf("%s saved %v, %v", n.Name(), v, err)
		}
	}
	// Another view of an epoch already installed is refused everywhere.
	other, _ := NewView(2, []ViewAgent{{Name: "a"}, {Name: "c"}})
	if err := b.ProposeView(ctx, other, "conflict"); err == nil {
		t.Fatal("a second view of epoch 2 was accepted")
	}
	// A view of the next epoch proposed by another agent after a
	// conflicting promise is refused, and changes nothing.
	p3, _ := NextView(a.View(), []ViewAgent{{Name: "c"}})
	if !c.promise(p3) {
		t.Fatal("c refused a fresh promise")
	}
	q3, _ := NewView(3, []ViewAgent{{Name: "b"}, {Name: "c"}})
	err = b.ProposeView(ctx, q3, "conflict")
	if !errors.Is(err, ErrViewConflict) {
		t.Fatalf("conflicting proposal: %v, want ErrViewConflict", err)
	}
	if a.View().Epoch != 2 || b.View().Epoch != 2 {
		t.Fatalf("a refused proposal changed a view: %s / %s", a.View(), b.View())
	}
	// The promised one goes through; c, back in the view, is told.
	if err := a.ProposeView(ctx, p3, "c joins again"); err != nil {
		t.Fatal(err)
	}
	if got := hs[2].seen(); len(got) != 2 || got[1] != "epoch 2: a, b -> epoch 3: a, b, c" {
		t.Errorf("c was told %q", got)
	}
}

func TestViewCatchUpByGossip(t *testing.T) {
	ha, hb := &viewHost{testHost: newTestHost()}, &viewHost{testHost: newTestHost()}
	a := mustNode(t, "a", nil, 2, ha)
	b := mustNode(t, "b", []string{a.cfg.Bind.String()}, 2, hb)
	defer a.Close(100 * time.Millisecond)
	defer b.Close(100 * time.Millisecond)
	waitReady(t, a, b)
	// a installs epoch 2 without telling b (a commit lost): b learns it
	// from a's gossiped epoch.
	next, _ := NextView(a.View(), []ViewAgent{{Name: "a", Weight: 2}})
	if err := a.installView(next, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for b.View().Epoch != 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if b.View().Epoch != 2 || !sameAgents(b.View(), next) {
		t.Fatalf("b holds %s, want %s", b.View(), next)
	}
	if got := hb.seen(); len(got) != 1 {
		t.Fatalf("b was told %q", got)
	}
}
