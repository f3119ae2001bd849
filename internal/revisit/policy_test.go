package revisit

import (
	"github.com/petrel-crawler/petrel/internal/frontier"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

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
		fc += freshness(l, int64(d))
		fu += freshness(l, int64(float64(n)/budget*1e9))
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
// Last-Modified times, approaches the true rate, for a page that changes
// less often than it is visited and for one that changes much more often
// (where Last-Modified, the time of the last change before a visit, is
// what tells them apart).
func TestRateEstimate(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const iv = 300.0 // a visit every 5 minutes
	for _, lambda := range []float64{1.0 / 600, 1.0 / 20} {
		for _, timed := range []bool{false, true} {
			if lambda > 1/iv && !timed {
				continue // every visit finds a change: only a lower bound
			}
			st := &State{Last: int64(time.Hour)}
			for range 400 {
				now := st.Last + int64(iv*1e9)
				since := rng.ExpFloat64() / lambda // since the last change before now
				var lm int64
				if timed {
					lm = now - int64(since*1e9)
				}
				st.watch(now, lm, since < iv, true)
			}
			if got := st.Rate(1); math.Abs(got-lambda)/lambda > 0.2 {
				t.Errorf("rate %.5f/s, timed %v: estimate %.5f/s", lambda, timed, got)
			}
		}
	}
	// Found unchanged once: not a rate of zero, but half a change over the
	// time watched and the prior's.
	once := &State{Visits: 1, Exposure: int64(100 * time.Second)}
	if got, want := once.Rate(1.0/60), 0.5/130; math.Abs(got-want) > 1e-9 {
		t.Errorf("one unchanged visit of 100 s: %.5f/s, want %.5f/s", got, want)
	}
}

// TestChangeRateSmallSchedule: without a budget, the change-rate
// intervals of a few pages not yet seen changing stay near the initial
// one (one change assumed per 24 × Min), not at Min: the multiplier is
// never solved on an empty histogram and is solved again as it fills.
func TestChangeRateSmallSchedule(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	s, err := Open(Config{Dir: t.TempDir(), Settings: Settings{Policy: PolicyChangeRate, Min: time.Hour, Max: 672 * time.Hour},
		Issue: func([]byte) error { return nil }, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	meta := frontier.Meta{Depth: 1}.Append(nil)
	for i := range 100 {
		u := "http://a.test/" + strconv.Itoa(i)
		due, err := s.Visited(u, meta, Visit{Time: clk.now(), Status: 200, Full: true})
		if err != nil {
			t.Fatal(err)
		}
		if d := due.Sub(clk.now()); i >= 16 && (d < 12*time.Hour || d > 48*time.Hour) {
			t.Fatalf("page %d: first interval %v, want about 24 h", i, d)
		}
	}
	if f := s.Figures().Freshness; f < 0.55 || f > 0.75 {
		t.Fatalf("estimated freshness %.3f, want about 1 − 1/e", f)
	}
}

// TestLastModifiedWrong: a Last-Modified that moves while the payload does
// not (the time of the request, as some servers send) stops timing the
// changes: they count their whole intervals, as without Last-Modified.
func TestLastModifiedWrong(t *testing.T) {
	sec := int64(time.Second)
	st := &State{Last: 100 * sec, LastModified: 100}
	st.watch(200*sec, 200*sec, true, true) // changed: timed, 0 s since its date
	if st.Timed != 1 || st.LMWrong {
		t.Fatalf("a change dated by a true-looking Last-Modified: %+v", st)
	}
	st.LastModified = 200
	st.watch(300*sec, 300*sec, false, true) // unchanged, the date moved
	if !st.LMWrong {
		t.Fatalf("an unchanged 200 of another Last-Modified: not flagged")
	}
	st.LastModified = 300
	st.watch(400*sec, 400*sec, true, true)
	if st.Timed != 1 || st.Exposure != 200*sec {
		t.Fatalf("a change after the flag: timed %d, exposure %v", st.Timed, time.Duration(st.Exposure))
	}
	// A 304 keeps the last capture's validators: its Last-Modified says nothing.
	ok := &State{Last: 100 * sec, LastModified: 50}
	ok.watch(200*sec, 150*sec, false, false)
	if ok.LMWrong {
		t.Fatal("a 304 flagged")
	}
}

// TestDatedGiveUp: a URL whose two changes Last-Modified dated shortly
// before their visits, which the budget cannot keep fresh, goes to Max at
// once; after one such change, or with a Last-Modified that moved without
// a change, its interval at most doubles.
func TestDatedGiveUp(t *testing.T) {
	p, err := newPolicy(Settings{Policy: PolicyChangeRate, Min: 2500 * time.Millisecond, Max: 28 * time.Minute, Budget: 5})
	if err != nil {
		t.Fatal(err)
	}
	for range 400 {
		p.rates.Move(-1, p.prior())
	}
	cur := time.Minute
	for _, c := range []struct {
		name string
		st   State
		want time.Duration
	}{
		{"two dated changes", State{Visits: 2, Changes: 2, Timed: 2, Exposure: int64(time.Second)}, p.max},
		{"one dated change", State{Visits: 1, Changes: 1, Timed: 1, Exposure: int64(time.Second / 2)}, 2 * cur},
		{"two dated changes, Last-Modified moved since", State{Visits: 3, Changes: 2, Timed: 2, Exposure: int64(time.Second), LMWrong: true}, 2 * cur},
	} {
		c.st.Interval = int64(cur)
		if got := p.next(&c.st, true); got != c.want {
			t.Errorf("%s (rate %.3f/s): next interval %v, want %v", c.name, c.st.Rate(p.prior()), got, c.want)
		}
	}
}
