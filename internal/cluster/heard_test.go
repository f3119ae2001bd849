package cluster

import (
	"log/slog"
	"os"
	"testing"
	"time"
)

func TestSuspectLine(t *testing.T) {
	for _, c := range []struct {
		line, name string
		ok         bool
	}{
		{"[INFO] memberlist: Suspect agent2 has failed, no acks received", "agent2", true},
		{"2026/12/02 [INFO] memberlist: Suspect a.b-c has failed, no acks received", "a.b-c", true},
		{"[INFO] memberlist: Marking agent2 as failed, suspect timeout reached (0 peer confirmations)", "", false},
		{"[WARN] memberlist: Refuting a suspect message (from: agent1)", "", false},
		{"[INFO] memberlist: Suspect  has failed, no acks received", "", false},
	} {
		if name, ok := suspectLine(c.line); name != c.name || ok != c.ok {
			t.Errorf("suspectLine(%q) = %q, %v; want %q, %v", c.line, name, ok, c.name, c.ok)
		}
	}
}

// TestMembersHeardAndSuspected runs two real memberlists on loopback: each
// hears from the other; once b stops without leaving, a lists it suspect
// (its probes unanswered), then dead, and no longer hears from it.
func TestMembersHeardAndSuspected(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	timing := Timing{Probe: 50 * time.Millisecond}
	start := func(name string) *membership {
		m, err := startMembership(name, freeAddr(t), "heard-test", testKey, timing, Meta{Exchange: name + ".x"}, logger)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := start("a"), start("b")
	defer a.leave(time.Second)
	if r := b.join([]string{a.ml.LocalNode().Address()}); !r.joined {
		t.Fatal(r.err)
	}
	member := func(m *membership, name string) Member {
		for _, mb := range m.statusMembers(m.ml.LocalNode().Name, time.Now().UTC()) {
			if mb.Name == name {
				return mb
			}
		}
		return Member{}
	}
	waitState := func(what string, ok func(Member) bool) Member {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if mb := member(a, "b"); ok(mb) {
				return mb
			}
			if time.Now().After(deadline) {
				t.Fatalf("a never saw b %s: %+v", what, member(a, "b"))
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	heard := waitState("alive and heard from", func(m Member) bool { return m.State == "alive" && !m.LastHeard.IsZero() })
	if self := member(a, "a"); self.State != "alive" || self.LastHeard.Before(heard.LastHeard) {
		t.Errorf("a lists itself as %+v", self)
	}
	if mb := member(b, "a"); mb.LastHeard.IsZero() {
		t.Errorf("b never heard from a: %+v", mb)
	}
	b.ml.Shutdown() // stopped, not left: a's probes go unanswered
	waitState("suspect", func(m Member) bool { return m.State == "suspect" })
	dead := waitState("dead", func(m Member) bool { return m.State == "dead" })
	if dead.LastHeard.Before(heard.LastHeard) {
		t.Errorf("last heard from b went back: %s, then %s", heard.LastHeard, dead.LastHeard)
	}
	time.Sleep(10 * timing.Probe)
	if again := member(a, "b"); !again.LastHeard.Equal(dead.LastHeard) {
		t.Errorf("a heard from b after its death: %s, then %s", dead.LastHeard, again.LastHeard)
	}
}

// TestSlotsOwned: the slots each agent owns are those OwnerOfSlot gives
// it, and they add up to every slot.
func TestSlotsOwned(t *testing.T) {
	v := mustView(t, 3, []ViewAgent{{Name: "a", Weight: 1}, {Name: "b", Weight: 3}})
	got := v.SlotsOwned()
	want := map[string]int{}
	for s := uint32(0); s < Slots; s++ {
		want[v.OwnerOfSlot(s)]++
	}
	if len(got) != 2 || got["a"] != want["a"] || got["b"] != want["b"] || got["a"]+got["b"] != Slots {
		t.Fatalf("SlotsOwned = %v, want %v (of %d)", got, want, Slots)
	}
	if share := float64(got["b"]) / Slots; share < 0.74 || share > 0.76 {
		t.Errorf("an agent of weight 3 beside one of weight 1 owns %.3f of the slots", share)
	}
	if got := mustView(t, 1, agents(3)).SlotsOwned(); len(got) != 3 {
		t.Errorf("three agents: %v", got)
	}
}
