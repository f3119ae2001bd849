package coord

import (
	"maps"
	"slices"
	"strconv"
	"time"
)

// Policy is how the view's writer decides.
type Policy struct {
	// Wait is the number of agents the first view waits for (≥ 1).
	Wait int
	// DeathDelay is how long a member whose lease expired keeps its keys
	// before a view moves them: the longest request it may have begun
	// before its fence closed, plus the longest delay its keys or
	// addresses may owe.
	DeathDelay time.Duration
	// Settle is how long a join waits for others before its view is
	// written, so agents started together make one view change.
	Settle time.Duration
}

// writer is the state machine of the elected agent: from the crawl's
// state and the clock it decides the next view and the end's next wave
// (the invariants it keeps: doc.go). It does no I/O; Lead (lead.go)
// writes what it decides.
type writer struct {
	p       Policy
	gone    map[string]time.Time // members seen without a key, since
	joining time.Time            // first seen a live agent outside the view
	wave    waveState
}

type waveState struct {
	n       int64  // the wave asked last (State.Probe as written)
	prevSig string // the figures of the last wave, all idle; "" if not
	asked   time.Time
}

func newWriter(p Policy) *writer {
	return &writer{p: p, gone: map[string]time.Time{}}
}

// nextView returns the view to write, or nil, and when to decide again
// (zero: at the next change).
func (w *writer) nextView(st State, now time.Time) (*ViewRecord, time.Time) {
	cur := st.View.ViewRecord
	if st.View.Rev == 0 {
		var vr ViewRecord
		for _, r := range st.Agents {
			if !r.Leaving {
				vr.Members = append(vr.Members, member(r))
			}
		}
		if len(vr.Members) < w.p.Wait {
			return nil, time.Time{}
		}
		vr.normalize()
		return &vr, time.Time{}
	}
	next := ViewRecord{Absent: slices.Clone(cur.Absent)}
	var wake time.Time
	for _, m := range cur.Members {
		r, ok := st.Agents[m.Name]
		switch {
		case ok && r.Leaving:
			delete(w.gone, m.Name)
		case ok:
			delete(w.gone, m.Name)
			next.Members = append(next.Members, member(r))
		default:
			if dead := w.deadAt(m.Name, now); now.Before(dead) {
				next.Members = append(next.Members, m)
				wake = earliest(wake, dead)
			} else {
				next.Absent = append(next.Absent, m.Name)
			}
		}
	}
	// A leaver gone before its leave was done (its last kept record says
	// leaving, not done) may owe releases it will never send: absent
	// after DeathDelay, as a member gone, so that nobody waits for them.
	for name, r := range st.Last {
		if _, alive := st.Agents[name]; alive || !r.Leaving || r.Done || cur.Has(name) || slices.Contains(cur.Absent, name) {
			continue
		}
		if dead := w.deadAt(name, now); now.Before(dead) {
			wake = earliest(wake, dead)
		} else {
			next.Absent = append(next.Absent, name)
		}
	}
	var joiners []ViewMember
	for name, r := range st.Agents {
		if !r.Leaving && !cur.Has(name) {
			joiners = append(joiners, member(r))
		}
	}
	if len(joiners) == 0 {
		w.joining = time.Time{}
	} else if w.joining.IsZero() {
		w.joining = now
	}
	if settled := w.joining.Add(w.p.Settle); len(joiners) > 0 && now.Before(settled) {
		wake = earliest(wake, settled)
	} else if len(joiners) > 0 {
		next.Members = append(next.Members, joiners...)
		w.joining = time.Time{}
	}
	next.normalize()
	// A forgotten absentee is dropped once a view has listed it absent:
	// those awaiting its release stop at that view.
	// A leaver listed absent (killed in its leave) that finished it since
	// owes nothing more.
	next.Absent = slices.DeleteFunc(next.Absent, func(n string) bool {
		done := st.Last[n].Leaving && st.Last[n].Done
		return st.Forget[n] && slices.Contains(cur.Absent, n) || next.Has(n) || done
	})
	if next.Equal(cur) || len(next.Members) == 0 {
		return nil, wake
	}
	return &next, wake
}

// deadAt returns when name, gone since this writer first saw it gone
// (now, if not before), counts as dead.
func (w *writer) deadAt(name string, now time.Time) time.Time {
	since, seen := w.gone[name]
	if !seen {
		since = now
		w.gone[name] = now
	}
	return since.Add(w.p.DeathDelay)
}

func member(r AgentRecord) ViewMember {
	return ViewMember{Name: r.Name, Weight: max(r.Weight, 1), Exchange: r.Exchange}
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// endStep decides the end's next step: ask a new wave (ask > 0), or
// declare the end. It asks only when every live agent's own figures say
// idle, and never more often than every minGap.
func (w *writer) endStep(st State, now time.Time, minGap time.Duration) (ask int64, end bool) {
	if st.Ended || st.View.Rev == 0 || len(st.View.Absent) > 0 || len(st.Agents) == 0 {
		w.wave.prevSig = ""
		return 0, false
	}
	for _, m := range st.View.Members {
		if _, ok := st.Agents[m.Name]; !ok {
			w.wave.prevSig = ""
			return 0, false
		}
	}
	sig, idle, answered := signature(st, w.wave.n)
	switch {
	case w.wave.n > 0 && st.Probe == w.wave.n && answered:
		if idle && sig == w.wave.prevSig {
			return 0, true
		}
		if idle {
			w.wave.prevSig = sig
		} else {
			w.wave.prevSig = ""
		}
	case w.wave.n > 0 && st.Probe == w.wave.n:
		return 0, false // the wave is still being answered
	}
	if !allIdle(st) || now.Sub(w.wave.asked) < minGap {
		return 0, false
	}
	w.wave.n = max(w.wave.n, st.Probe) + 1
	w.wave.asked = now
	return w.wave.n, false
}

// signature returns the live agents' figures as one string, whether all
// are idle, and whether every one has answered wave. No batch is in
// flight while all are idle: a batch stays in its sender's outbox until
// its receiver acknowledged it, and the receiver acknowledges only once
// it is in its inbox, which it counts as work until applied. The sums of
// batches sent and applied are not compared: those of agents gone (a
// forget, a leave) are not in them.
func signature(st State, wave int64) (string, bool, bool) {
	names := slices.Sorted(maps.Keys(st.Agents))
	sig, idle, answered := "", true, true
	for _, n := range names {
		f := st.Agents[n].Figures
		idle = idle && f.Idle
		answered = answered && f.Wave == wave
		sig += n + ":" + strconv.FormatUint(f.Activity, 10) + ":" + strconv.FormatInt(f.Fetched, 10) + ":" +
			strconv.FormatUint(f.Sent, 10) + ":" + strconv.FormatUint(f.Applied, 10) + ";"
	}
	return sig, idle, answered
}

func allIdle(st State) bool {
	for _, r := range st.Agents {
		if !r.Figures.Idle {
			return false
		}
	}
	return true
}
