package coord

import (
	"slices"
	"testing"
	"time"
)

func agents(ns ...string) map[string]AgentRecord {
	m := map[string]AgentRecord{}
	for _, n := range ns {
		m[n] = AgentRecord{Name: n, Exchange: n + ":1"}
	}
	return m
}

func viewOfNames(rev int64, ns ...string) View {
	var vr ViewRecord
	for _, n := range ns {
		vr.Members = append(vr.Members, ViewMember{Name: n, Weight: 1, Exchange: n + ":1"})
	}
	return View{ViewRecord: vr, Rev: rev}
}

// The writer on a manual clock: first view, settle, death delay counted
// from the writer's own sight, absentees, forget.
func TestWriterDecisions(t *testing.T) {
	p := Policy{Wait: 2, DeathDelay: 10 * time.Second, Settle: time.Second}
	w := newWriter(p)
	t0 := time.Unix(1000, 0)
	if v, _ := w.nextView(State{Agents: agents("a")}, t0); v != nil {
		t.Fatalf("first view with 1 of 2 agents: %+v", v)
	}
	v, _ := w.nextView(State{Agents: agents("a", "b")}, t0)
	if v == nil || len(v.Members) != 2 {
		t.Fatalf("first view: %+v", v)
	}

	// A joiner waits Settle for others.
	st := State{View: viewOfNames(5, "a", "b"), Agents: agents("a", "b", "c")}
	if v, wake := w.nextView(st, t0); v != nil || !wake.Equal(t0.Add(time.Second)) {
		t.Fatalf("join before settle: %+v, wake %v", v, wake)
	}
	st.Agents["d"] = AgentRecord{Name: "d"}
	if v, _ := w.nextView(st, t0.Add(time.Second)); v == nil || len(v.Members) != 4 {
		t.Fatalf("join after settle: %+v", v)
	}

	// A death: b's key goes; b keeps its keys DeathDelay from when this
	// writer saw it gone, then is absent.
	st = State{View: viewOfNames(9, "a", "b"), Agents: agents("a")}
	w2 := newWriter(p) // a new writer: counts from its own sight
	if v, wake := w2.nextView(st, t0); v != nil || !wake.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("death at once: %+v, wake %v", v, wake)
	}
	if v, _ := w2.nextView(st, t0.Add(9*time.Second)); v != nil {
		t.Fatalf("death before delay: %+v", v)
	}
	v, _ = w2.nextView(st, t0.Add(10*time.Second))
	if v == nil || v.Has("b") || !slices.Equal(v.Absent, []string{"b"}) {
		t.Fatalf("death after delay: %+v", v)
	}
	// b returns: a member again, no longer absent.
	st = State{View: View{ViewRecord: *v, Rev: 12}, Agents: agents("a", "b")}
	w2.nextView(st, t0.Add(20*time.Second)) // settles first, as any join
	v, _ = w2.nextView(st, t0.Add(21*time.Second))
	if v == nil || !v.Has("b") || len(v.Absent) != 0 {
		t.Fatalf("return: %+v", v)
	}
	// A forget drops an absentee.
	st = State{View: View{ViewRecord: ViewRecord{Members: viewOfNames(0, "a").Members, Absent: []string{"b"}}, Rev: 14}, Agents: agents("a"), Forget: map[string]bool{"b": true}}
	if v, _ := w2.nextView(st, t0.Add(30*time.Second)); v == nil || len(v.Absent) != 0 {
		t.Fatalf("forget: %+v", v)
	}
	// A leave: out at once, not absent.
	st = State{View: viewOfNames(16, "a", "b"), Agents: agents("a", "b")}
	st.Agents["b"] = AgentRecord{Name: "b", Leaving: true}
	if v, _ := w2.nextView(st, t0.Add(40*time.Second)); v == nil || v.Has("b") || len(v.Absent) != 0 {
		t.Fatalf("leave: %+v", v)
	}
}

// The end needs two answered waves, all idle, equal figures.
func TestWriterEndNeedsTwoEqualWaves(t *testing.T) {
	w := newWriter(Policy{Wait: 1})
	t0 := time.Unix(1000, 0)
	idle := func(wave int64, activity uint64) State {
		st := State{View: viewOfNames(3, "a", "b"), Agents: agents("a", "b"), Probe: wave}
		for n, r := range st.Agents {
			r.Figures = Figures{Idle: true, Wave: wave, Activity: activity}
			st.Agents[n] = r
		}
		return st
	}
	ask, end := w.endStep(idle(0, 0), t0, waveGap)
	if ask != 1 || end {
		t.Fatalf("first step: ask %d end %v", ask, end)
	}
	// Wave 1 answered, all idle: a second wave, not the end.
	ask, end = w.endStep(idle(1, 0), t0.Add(waveGap), waveGap)
	if ask != 2 || end {
		t.Fatalf("after wave 1: ask %d end %v", ask, end)
	}
	// Wave 2 answered with other figures (work happened between): no end.
	ask, end = w.endStep(idle(2, 1), t0.Add(2*waveGap), waveGap)
	if end || ask != 3 {
		t.Fatalf("after a changed wave 2: ask %d end %v", ask, end)
	}
	// Wave 3 equal to wave 2: the end.
	if _, end = w.endStep(idle(3, 1), t0.Add(3*waveGap), waveGap); !end {
		t.Fatal("two equal idle waves: no end")
	}
}
