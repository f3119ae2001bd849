package revisit

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// simLM says what Last-Modified a simulated page's server sends.
type simLM int

const (
	lmTrue simLM = iota // the time of the last change, in whole seconds
	lmNow               // the time of the request: wrong, and never a 304
	lmNone              // none (an ETag only, or stale validators)
	lmBare              // neither Last-Modified nor ETag: every visit a 200
)

// simPage is one page of the simulation: its true rate, its server's
// Last-Modified, its state, when it is due.
type simPage struct {
	lambda float64
	lm     simLM
	st     State
	due    float64
}

type simQueue []*simPage

func (q simQueue) Len() int           { return len(q) }
func (q simQueue) Less(i, j int) bool { return q[i].due < q[j].due }
func (q simQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)        { *q = append(*q, x.(*simPage)) }
func (q *simQueue) Pop() any          { o := *q; p := o[len(o)-1]; *q = o[:len(o)-1]; return p }

// simResult is what a simulated policy achieved after the warm-up: its
// time-averaged freshness and the share of its visits that found the
// page changed (a full fetch, where a 304 would have done otherwise).
type simResult struct {
	fresh, changed, saved float64
	fastUndated           float64 // the share of visits to pages changing hourly or faster without a usable Last-Modified
}

// simBase is the simulation's time 0 in Unix ns: every page was first
// fetched then.
const simBase = int64(time.Second)

func simNs(t float64) int64 { return simBase + int64(t*1e9) }

// simPages draws n pages of the testweb mix (a day of day seconds): 70 %
// send a true Last-Modified, 5 % the request's time, the rest none.
func simPages(p *policy, n int, day float64, rng *rand.Rand) simQueue {
	q := make(simQueue, 0, n)
	for range n {
		days := []float64{7, 1, 1.0 / 24, 1.0 / 1440}
		x, c := rng.IntN(1000), 0
		for _, share := range []int{600, 250, 120, 30} {
			if x < share {
				break
			}
			x -= share
			c++
		}
		pg := &simPage{lambda: 1 / (days[min(c, 3)] * day * math.Exp2(2*rng.Float64()-1)), lm: lmNone}
		if k := rng.IntN(100); k < 70 {
			pg.lm = lmTrue
		} else if k < 75 {
			pg.lm = lmNow
		} else if k < 85 {
			pg.lm = lmBare
		}
		pg.st.Interval, pg.st.Last = int64(p.initial()), simBase
		pg.due = p.initial().Seconds()
		p.rates.Move(-1, pg.st.Rate(p.prior()))
		q = append(q, pg)
	}
	heap.Init(&q)
	return q
}

// simVisit visits pg at now (its last visit at prev) with Poisson
// changes, updates its state as the schedule would, and returns when its
// copy went stale after prev (≥ now: it did not) and whether it changed.
func simVisit(p *policy, pg *simPage, prev, now float64, rng *rand.Rand) (stale float64, changed bool) {
	e := rng.ExpFloat64() / pg.lambda // the first change after prev
	changed = e < now-prev
	var lm int64
	switch {
	case pg.lm == lmNow:
		lm = simNs(math.Floor(now))
	case pg.lm == lmTrue && changed:
		last := max(prev+e, now-rng.ExpFloat64()/pg.lambda) // the last change before now
		lm = simNs(math.Floor(last))
	case pg.lm == lmTrue:
		lm = pg.st.LastModified * 1e9
	}
	from := pg.st.Rate(p.prior())
	full := changed || pg.lm != lmTrue // a 200: its Last-Modified is kept
	pg.st.watch(simNs(now), lm, changed, full)
	if full {
		pg.st.LastModified = lm / 1e9
	}
	p.rates.Move(from, pg.st.Rate(p.prior()))
	return prev + e, changed
}

// simulate runs a policy over n pages with Poisson changes of the testweb
// mix (a day of 1,000 s), visits at most budget a second, and returns what
// it achieved after the first two days.
func simulate(name string, n int, budget float64, seed uint64) simResult {
	var day = 1000.0
	minI, maxI := time.Duration(day/24*float64(time.Second)), time.Duration(28*day*float64(time.Second))
	p, _ := newPolicy(Settings{Policy: name, Min: minI, Max: maxI, Budget: budget})
	rng := rand.New(rand.NewPCG(seed, 9))
	q := simPages(p, n, day, rng)
	warm, end := 2*day, 12*day
	fresh, now, last := 0.0, 0.0, make(map[*simPage]float64, n)
	visits, changes, bodies, fast := 0, 0, 0, 0
	for now < end {
		pg := heap.Pop(&q).(*simPage)
		now = max(pg.due, now+1/budget)
		prev := last[pg]
		stale, changed := simVisit(p, pg, prev, now, rng)
		if lo, hi := max(prev, warm), min(now, end); hi > lo {
			fresh += max(min(stale, hi)-lo, 0)
		}
		if now > warm && now < end {
			visits++
			if changed {
				changes++
			}
			if changed || pg.lm == lmNow || pg.lm == lmBare {
				bodies++
			}
			if pg.lm != lmTrue && pg.lambda > 12/day {
				fast++
			}
		}
		d := p.next(&pg.st, changed)
		pg.st.Interval = int64(d)
		last[pg] = now
		pg.due = now + d.Seconds()
		heap.Push(&q, pg)
	}
	for _, pg := range q { // the time since each page's last visit
		prev := last[pg]
		e := rng.ExpFloat64() / pg.lambda
		if lo := max(prev, warm); end > lo {
			fresh += max(min(prev+e, end)-lo, 0)
		}
	}
	return simResult{fresh: fresh / (float64(n) * (end - warm)), changed: float64(changes) / float64(max(visits, 1)),
		saved: 1 - float64(bodies)/float64(max(visits, 1)), fastUndated: float64(fast) / float64(max(visits, 1))}
}

// TestPoliciesSimulated: with its estimates learnt from visits alone, the
// change-rate policy keeps pages of the testweb mix fresher than a
// uniform interval at the same budget, and than the anchors' rules, at a
// budget that visits each page every quarter of a day on average and at
// one that visits each every 1.8 days (that of bench revisit's six-day
// sitting: 531 URLs at 5 a second, a day of 60 s).
func TestPoliciesSimulated(t *testing.T) {
	const n = 400
	for _, days := range []float64{0.25, 1.8} {
		budget := n / (days * 1000)
		got := map[string]simResult{}
		for _, name := range Policies {
			got[name] = simulate(name, n, budget, 1)
			t.Logf("each page every %g days: %s: freshness %.3f, visits finding a change %.0f %%, bodies saved %.0f %%", days, name, got[name].fresh, 100*got[name].changed, 100*got[name].saved)
		}
		if c, u := got[PolicyChangeRate], got[PolicyUniform]; c.fresh < u.fresh {
			t.Errorf("each page every %g days: change-rate %.3f below uniform %.3f", days, c.fresh, u.fresh)
		}
	}
}
