package revisit

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// The policies. Each chooses a URL's next interval from its State, the
// visit just made (changed or not) and, for the budgeted ones, the rates
// of the whole schedule (a Rates). Intervals are kept within [Min, Max].
const (
	PolicyUniform    = "uniform"      // one interval for all: scheduled URLs / budget
	PolicyHeritrix   = "heritrix"     // Heritrix's WaitEvaluator: ×1.5 unchanged, ÷1.5 changed
	PolicyStorm      = "stormcrawler" // StormCrawler's AdaptiveScheduler: halfway to Min changed, ×1.5 unchanged
	PolicyChangeRate = "change-rate"  // estimated rates, intervals that maximise freshness for the budget
)

// Policies lists the policy names.
var Policies = []string{PolicyChangeRate, PolicyUniform, PolicyHeritrix, PolicyStorm}

// policy is a Settings' policy with its bounds, and the rates it shares.
type policy struct {
	name     string
	min, max time.Duration
	rates    *Rates // with the budget in force
}

// initial is the first interval: the anchors' one day, which is 24 times
// their minimum of one hour (Min stands for that hour), within Max.
func (p *policy) initial() time.Duration { return min(24*p.min, p.max) }

// prior is the change rate assumed of a URL not yet seen changing or not:
// one change per initial interval.
func (p *policy) prior() float64 { return 1 / p.initial().Seconds() }

// initialOf is the first interval of st: its sitemap's changefreq period
// when it had one (within Min and Max), else initial.
func (p *policy) initialOf(st *State) time.Duration {
	if st.Hint > 0 {
		return min(max(time.Duration(st.Hint), p.min), p.max)
	}
	return p.initial()
}

// priorOf is the change rate assumed of st before its visits say more:
// one change per its first interval.
func (p *policy) priorOf(st *State) float64 { return 1 / p.initialOf(st).Seconds() }

// next returns the interval after a visit of st (already updated) that
// found the URL changed or not.
func (p *policy) next(st *State, changed bool) time.Duration {
	cur := time.Duration(st.Interval)
	if cur <= 0 {
		cur = p.initialOf(st)
	}
	var d time.Duration
	switch p.name {
	case PolicyHeritrix:
		if changed {
			d = time.Duration(float64(cur) / 1.5)
		} else {
			d = time.Duration(float64(cur) * 1.5)
		}
	case PolicyStorm:
		if changed {
			d = time.Duration(0.5*float64(cur) + 0.5*float64(p.min))
		} else {
			d = time.Duration(float64(cur) * 1.5)
		}
	case PolicyUniform:
		d = p.initial() // one interval for all: a hint does not apply
		if n, b := p.rates.Count(), p.rates.Budget(); b > 0 && n > 0 {
			d = time.Duration(float64(n) / b * 1e9)
		}
	default:
		d = p.initialOf(st) // the first URL: no histogram to plan from yet
		if p.rates.Count() > 0 {
			// An estimate from a few visits may be far off, and the
			// next visit is where more evidence comes from: the interval
			// at most doubles from one visit to the next, so a URL that
			// one visit made look given up (μλ ≥ 1) or unchanging is
			// seen again long before Max. Two changes that Last-Modified
			// dated are evidence enough: a URL whose estimate from them
			// puts it at Max (given up, or changing too seldom for any
			// shorter interval) goes there at once.
			d = p.rates.Interval(st.Rate(p.priorOf(st)))
			if d < p.max || !st.twiceDated() {
				d = min(d, 2*cur)
			}
		}
	}
	return min(max(d, p.min), p.max)
}

// Rates is a histogram of the estimated change rates of the scheduled
// URLs, in buckets of a factor of 2^(1/4) from 10⁻⁹/s, from which the
// change-rate policy solves for the Lagrange multiplier of Cho and
// Garcia-Molina's optimum: at the optimum every URL's freshness gains
// the same per extra visit. Safe for concurrent use.
type Rates struct {
	mu       sync.Mutex
	buckets  [rateBuckets]int64
	n        int64
	min, max time.Duration
	budget   float64
	mu0      float64 // the multiplier solved last
	dirty    int     // changes since
}

const (
	rateBuckets = 160
	rateFloor   = 1e-9
	rateStep    = 4 // buckets per doubling
)

func newRates(minI, maxI time.Duration, budget float64) *Rates {
	return &Rates{min: minI, max: maxI, budget: budget, dirty: 1}
}

func bucketOf(r float64) int {
	if r <= rateFloor {
		return 0
	}
	return min(int(math.Log2(r/rateFloor)*rateStep), rateBuckets-1)
}

func bucketRate(b int) float64 { return rateFloor * math.Exp2((float64(b)+0.5)/rateStep) }

// Move moves one URL from the bucket of rate from to that of rate to;
// from < 0 adds one, to < 0 removes one.
func (r *Rates) Move(from, to float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// A histogram saved before the last crash may lack a URL it is
	// asked to move: its counts never go below zero.
	if b := bucketOf(from); from >= 0 && r.buckets[b] > 0 {
		r.buckets[b]--
		r.n--
	}
	if to >= 0 {
		r.buckets[bucketOf(to)]++
		r.n++
	}
	r.dirty++
}

// Count returns how many URLs the histogram holds.
func (r *Rates) Count() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Budget returns the revisits a second planned for (0: none).
func (r *Rates) Budget() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.budget
}

// SetBudget plans for b revisits a second from now on (0: none); the
// multiplier is solved again at the next Interval.
func (r *Rates) SetBudget(b float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b != r.budget {
		r.budget, r.mu0 = b, 0
	}
}

// gain is g(x) = 1 − (1+x)e^(−x): with x = λ/f, the marginal freshness of
// a visit frequency f of a page of rate λ (Poisson changes, visits every
// 1/f) is g(x)/λ.
func gain(x float64) float64 { return 1 - (1+x)*math.Exp(-x) }

// ratio solves g(x) = y for x (0 ≤ y < 1) by bisection.
func ratio(y float64) float64 {
	lo, hi := 0.0, 64.0
	for range 40 {
		m := (lo + hi) / 2
		if gain(m) < y {
			lo = m
		} else {
			hi = m
		}
	}
	return (lo + hi) / 2
}

// interval is the optimal interval of a page of rate λ for multiplier μ:
// 1/f with g(λ/f) = μλ, Max when μλ ≥ 1 (a page that changes too often
// to be kept fresh is not worth the budget), within [Min, Max].
func (r *Rates) interval(lambda, mu float64) time.Duration {
	y := mu * lambda
	if y >= 1 || lambda <= 0 {
		return r.max
	}
	d := time.Duration(ratio(y) / lambda * 1e9)
	return min(max(d, r.min), r.max)
}

// Interval returns the interval of a page of estimated rate lambda that
// maximises the expected freshness of the schedule for the budget.
func (r *Rates) Interval(lambda float64) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	// The multiplier moves slowly with the histogram: solved again after
	// changes to 1/64 of it (at least 16), or when never solved.
	if r.mu0 == 0 || r.dirty > 0 && r.dirty >= max(16, int(r.n/64)) {
		r.solve()
	}
	return r.interval(lambda, r.mu0)
}

// solve finds μ such that the visits per second of every bucket's URLs
// at their optimal intervals sum to the budget (or, with no budget, a
// μ whose intervals average the initial one).
func (r *Rates) solve() {
	r.dirty = 0
	budget := r.budget
	if budget <= 0 {
		budget = float64(r.n) / min(24*r.min, r.max).Seconds()
	}
	spend := func(mu float64) float64 {
		s := 0.0
		for b, c := range r.buckets {
			if c > 0 {
				s += float64(c) / r.interval(bucketRate(b), mu).Seconds()
			}
		}
		return s
	}
	// spend falls as μ grows: bisect on log μ.
	lo, hi := -60.0, 60.0
	for range 48 {
		m := (lo + hi) / 2
		if spend(math.Exp(m)) > budget {
			lo = m
		} else {
			hi = m
		}
	}
	r.mu0 = math.Exp(hi)
}

// newPolicy returns the policy of s.
func newPolicy(s Settings) (*policy, error) {
	p := &policy{name: s.Policy, min: s.Min, max: s.Max}
	switch s.Policy {
	case PolicyUniform, PolicyHeritrix, PolicyStorm, PolicyChangeRate:
	default:
		return nil, fmt.Errorf("revisit: unknown policy %q", s.Policy)
	}
	if s.Min <= 0 || s.Max < s.Min {
		return nil, fmt.Errorf("revisit: interval bounds %v–%v", s.Min, s.Max)
	}
	p.rates = newRates(s.Min, s.Max, s.Budget)
	return p, nil
}
