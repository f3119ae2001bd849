package agent

import (
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestRevisitEndsAtMaxURLs: a revisit crawl of one agent runs until
// stopped, but once its --max-urls page fetches are done it ends by
// itself, as a crawl without --revisit does, with exactly that many.
func TestRevisitEndsAtMaxURLs(t *testing.T) {
	const limit = 25
	c := newTestCrawl(t, "127.61.4.1", 2, 20, func(cfg *Config, w *testweb.Web) {
		cfg.Revisit.On = true
		cfg.Revisit.Min, cfg.Revisit.Max = 200*time.Millisecond, 200*time.Millisecond
		cfg.Frontier.MaxURLs = limit
	})
	c.run(t) // fails unless the crawl ends by itself within a minute
	if got := c.a.Stats().PagesDispatched.Load(); got != limit {
		t.Errorf("%d page fetches dispatched, want the limit %d", got, limit)
	}
}
