package revisit

import (
	"fmt"
	"time"

	"github.com/petrel-crawler/petrel/internal/settings"
)

// Settings are a revisit crawl's settings, declared in Table.
type Settings struct {
	On       bool          // --revisit: keep the crawl fresh after its first pass
	Policy   string        // one of Policies
	Budget   float64       // revisit fetches per second (0: no cap)
	Min, Max time.Duration // bounds of every interval
}

// Table declares the revisit settings, bound to s.
func (s *Settings) Table() settings.Table {
	const atStart = "the schedule is opened with it"
	return settings.Table{
		settings.Bool(&s.On, "revisit", false,
			"keep the crawl running after its first pass: every page fetched is fetched again when due, with If-None-Match and If-Modified-Since, through the same politeness; runs until stopped, or until --max-urls page fetches are done").
			In(settings.Operations).SetFixed(atStart).ClusterWide(),
		settings.Enum(&s.Policy, "revisit-policy", PolicyChangeRate, Policies,
			"how revisit intervals are chosen: change-rate (estimate each page's change rate, spend the budget where it buys the most freshness), uniform, heritrix (WaitEvaluator) or stormcrawler (AdaptiveScheduler)").
			WithUnit("POLICY").In(settings.Operations).SetFixed(atStart).ClusterWide(),
		settings.Float(&s.Budget, "revisit-budget", 0,
			"revisit fetches per second the schedule issues at most, and that change-rate and uniform plan for (0: no cap)").
			In(settings.Operations).Range(0.0, 1e6).SetFixed(atStart).ClusterWide(),
		settings.Duration(&s.Min, "revisit-min", time.Hour,
			"shortest revisit interval (the anchors' one hour; the first interval is 24 times it, their one day)").
			In(settings.Operations).Range(time.Millisecond, 365*24*time.Hour).SetFixed(atStart).ClusterWide(),
		settings.Duration(&s.Max, "revisit-max", 28*24*time.Hour,
			"longest revisit interval (Heritrix's four weeks)").
			In(settings.Operations).Range(time.Millisecond, 10*365*24*time.Hour).SetFixed(atStart).ClusterWide().
			Check(func() error {
				if s.Max < s.Min {
					return fmt.Errorf("%v is shorter than --revisit-min %v", s.Max, s.Min)
				}
				return nil
			}),
	}
}
