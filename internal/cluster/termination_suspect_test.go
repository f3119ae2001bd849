package cluster

import (
	"testing"
	"time"
)

// TestNoEndWhileSuspect: two idle agents over real memberlist and the real
// exchange, b answering every status call, but a (the detector) suspecting
// b as on memberlist's log line of an unanswered probe: no end while the
// suspicion lasts; once memberlist refutes it (an alive message about b),
// the crawl ends.
func TestNoEndWhileSuspect(t *testing.T) {
	ha, hb := newTestHost(), newTestHost()
	ha.busy.Store(true)
	a := mustNode(t, "a", nil, 2, ha)
	b := mustNode(t, "b", []string{a.cfg.Bind.String()}, 2, hb)
	defer a.Close(time.Second)
	defer b.Close(time.Second)
	waitReady(t, a, b)

	// memberlist's own refutation may end the suspicion at any time: the
	// suspicion is renewed, so that it lasts the whole hold.
	a.members.suspected("b")
	if !a.members.anySuspect() {
		t.Fatal("a does not list b suspect")
	}
	ha.busy.Store(false)
	probe := a.cfg.Timing.probe()
	holdEnd := time.Now().Add(20 * probe) // ten times the two waves an end takes
	for time.Now().Before(holdEnd) {
		a.members.suspected("b")
		select {
		case <-a.Finished():
			t.Fatal("the end was decided while the detector suspects b")
		case <-time.After(probe / 20):
		}
	}
	if s := a.Status(); !s.Idle || !b.Status().Idle {
		t.Fatalf("not idle: a %v, b %v", s.Idle, b.Status().Idle)
	}
	// An alive message about b, as memberlist delivers its refutation.
	for _, nd := range a.members.ml.Members() {
		if nd.Name == "b" {
			a.members.NotifyAlive(nd)
		}
	}
	if a.members.anySuspect() {
		t.Fatal("b still suspect after an alive message")
	}
	for _, nd := range []*Node{a, b} {
		select {
		case <-nd.Finished():
		case <-time.After(15 * time.Second):
			t.Fatalf("%s: no end once the suspicion ended; status %+v", nd.Name(), nd.Status())
		}
	}
}
