package revisit

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// freshness is the expected freshness of a page of rate λ visited every d.
func freshness(lambda float64, d time.Duration) float64 {
	x := lambda * d.Seconds()
	if x == 0 {
		return 1
	}
	return (1 - math.Exp(-x)) / x
}

// TestChangeRateOptimum: with the true rates of a heavy-tailed mix, the
// change-rate intervals spend the budget and reach a higher mean
// freshness than one uniform interval at the same spend, as Cho and
// Garcia-Molina showed; the heritrix and stormcrawler rules move the
// interval as their anchors do.
func TestChangeRateOptimum(t *testing.T) {
	const n = 2000
	minI, maxI := time.Second, 4*24*time.Hour
	rng := rand.New(rand.NewPCG(1, 2))
	rates := make([]float64, n)
	r := newRates(minI, maxI, 0)
	for i := range rates {
		day := 86400.0
		switch x := rng.IntN(100); {
		case x < 60:
			rates[i] = 1 / (7 * day)
		case x < 85:
			rates[i] = 1 / day
		case x < 97:
			rates[i] = 24 / day
		default:
			rates[i] = 1440 / day
		}
		r.Move(-1, rates[i])
	}
	budget := float64(n) / 86400 // each page once a day on average
	r.budget = budget
	r.solve()
	var spend, fc, fu float64
	for _, l := range rates {
		d := r.interval(l, r.mu0)
		spend += 1 / d.Seconds()
		fc += freshness(l, d)
		fu += freshness(l, time.Duration(float64(n)/budget*1e9))
	}
	fc, fu = fc/n, fu/n
	if math.Abs(spend-budget)/budget > 0.1 {
		t.Errorf("change-rate spends %.3f/s, budget %.3f/s", spend, budget)
	}
	if fc < fu*1.02 {
		t.Errorf("freshness: change-rate %.3f, uniform %.3f", fc, fu)
	}
	t.Logf("freshness at %.2f fetches/s: change-rate %.3f, uniform %.3f", budget, fc, fu)

	st := &State{Interval: int64(time.Hour)}
	h := &policy{name: PolicyHeritrix, min: minI, max: maxI, rates: r}
	if d := h.next(st, true); d != 40*time.Minute {
		t.Errorf("heritrix changed: %v", d)
	}
	if d := h.next(st, false); d != 90*time.Minute {
		t.Errorf("heritrix unchanged: %v", d)
	}
	sc := &policy{name: PolicyStorm, min: minI, max: maxI, rates: r}
	if d := sc.next(st, true); d != 30*time.Minute+500*time.Millisecond {
		t.Errorf("stormcrawler changed: %v", d)
	}
}

// TestRateEstimate: the estimate from changed/unchanged visits, and from
// Last-Modified times, approaches the true rate.
func TestRateEstimate(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const lambda = 1.0 / 600 // one change in 10 minutes
	for _, timed := range []bool{false, true} {
		st := &State{}
		for range 400 {
			iv := 5 * time.Minute
			wait := rng.ExpFloat64() / lambda
			st.Visits++
			if wait < iv.Seconds() {
				st.Changes++
				if timed {
					st.Timed++
					st.Exposure += int64(wait * 1e9)
					continue
				}
			}
			st.Exposure += int64(iv)
		}
		if got := st.Rate(1); math.Abs(got-lambda)/lambda > 0.2 {
			t.Errorf("timed %v: estimate %.5f/s, true %.5f/s", timed, got, lambda)
		}
	}
	// Found unchanged once: not a rate of zero, but half a change over the
	// time watched and the prior's.
	once := &State{Visits: 1, Exposure: int64(100 * time.Second)}
	if got, want := once.Rate(1.0/60), 0.5/130; math.Abs(got-want) > 1e-9 {
		t.Errorf("one unchanged visit of 100 s: %.5f/s, want %.5f/s", got, want)
	}
}
