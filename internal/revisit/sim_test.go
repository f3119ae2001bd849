package revisit

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// simPage is one page of the simulation: its true rate, its state, when
// it is due.
type simPage struct {
	lambda float64
	st     State
	due    float64
}

type simQueue []*simPage

func (q simQueue) Len() int           { return len(q) }
func (q simQueue) Less(i, j int) bool { return q[i].due < q[j].due }
func (q simQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)        { *q = append(*q, x.(*simPage)) }
func (q *simQueue) Pop() any          { o := *q; p := o[len(o)-1]; *q = o[:len(o)-1]; return p }

// simulate runs a policy over pages with Poisson changes of the testweb
// mix (a day of 1,000 s), visits at most budget a second, and returns the
// time-averaged freshness after the first two days.
func simulate(name string, n int, budget float64, seed uint64) float64 {
	var day = 1000.0
	minI, maxI := time.Duration(day/24*float64(time.Second)), time.Duration(28*day*float64(time.Second))
	p, _ := newPolicy(Settings{Policy: name, Min: minI, Max: maxI, Budget: budget})
	rng := rand.New(rand.NewPCG(seed, 9))
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
		pg := &simPage{lambda: 1 / (days[min(c, 3)] * day * math.Exp2(2*rng.Float64()-1))}
		pg.st.Interval = int64(p.initial())
		pg.due = p.initial().Seconds()
		p.rates.Move(-1, pg.st.Rate(p.prior()))
		q = append(q, pg)
	}
	heap.Init(&q)
	warm, end := 2*day, 12*day
	fresh, now, last := 0.0, 0.0, make(map[*simPage]float64, n)
	for now < end {
		pg := heap.Pop(&q).(*simPage)
		now = max(pg.due, now+1/budget)
		prev, seen := last[pg]
		if !seen {
			prev = 0
		}
		gap := now - prev
		e := rng.ExpFloat64() / pg.lambda
		changed := e < gap
		if lo, hi := max(prev, warm), min(now, end); hi > lo {
			fresh += max(min(prev+e, hi)-lo, 0)
		}
		from := pg.st.Rate(p.prior())
		pg.st.Visits++
		if changed {
			pg.st.Changes++
		}
		pg.st.Exposure += int64(gap * 1e9)
		p.rates.Move(from, pg.st.Rate(p.prior()))
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
	return fresh / (float64(n) * (end - warm))
}

// TestPoliciesSimulated: with its estimates learnt from visits alone, the
// change-rate policy keeps pages of the testweb mix fresher than a
// uniform interval at the same budget, and than the anchors' rules.
func TestPoliciesSimulated(t *testing.T) {
	const n = 400
	budget := float64(n) / 250 // each page every quarter of a day on average
	got := map[string]float64{}
	for _, name := range Policies {
		got[name] = simulate(name, n, budget, 1)
	}
	t.Logf("freshness at %.1f visits/s for %d pages: %v", budget, n, got)
	if got[PolicyChangeRate] < got[PolicyUniform] {
		t.Errorf("change-rate %.3f below uniform %.3f", got[PolicyChangeRate], got[PolicyUniform])
	}
}
