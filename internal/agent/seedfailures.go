package agent

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/petrel-crawler/petrel/internal/crawllog"
	"github.com/petrel-crawler/petrel/internal/frontier"
)

// ErrNoSeedFetched is wrapped by the error of a run that ended with
// nothing left to do and no page fetched, in this run or an earlier one:
// every seed failed or was refused. The crawl is not marked complete.
var ErrNoSeedFetched = errors.New("no seed was fetched")

// maxSeedReasons bounds the seeds the error of ErrNoSeedFetched names.
const maxSeedReasons = 20

// seedFailures keeps the last reason each seed of the run failed or was
// refused, by its index (frontier.Meta's Seed), for the error of a run
// that fetched nothing. It holds at most one entry per seed. Safe for
// concurrent use.
type seedFailures struct {
	mu  sync.Mutex
	why map[uint32]string
}

// noteSeed records why url, found as m says, was not fetched, when it is
// a seed of the run itself.
func (a *Agent) noteSeed(url string, m frontier.Meta, why string) {
	if m.Seed == 0 || int(m.Seed) > len(a.seedURLs) || a.seedURLs[m.Seed-1] != url {
		return
	}
	sf := &a.seedFails
	sf.mu.Lock()
	defer sf.mu.Unlock()
	if sf.why == nil {
		sf.why = map[uint32]string{}
	}
	sf.why[m.Seed] = why
}

// noteSeedRefused records a refusal of a seed for reason (rule: its text).
func (a *Agent) noteSeedRefused(url string, m frontier.Meta, reason crawllog.Reason, rule string) {
	if m.Seed == 0 {
		return
	}
	why := string(reason)
	switch {
	case reason == crawllog.ReasonAddress:
		why = "its address is loopback, private or link-local (give --allow-private to crawl it)"
	case reason == crawllog.ReasonDNS:
		why = "its host name did not resolve (check the name, or give --hosts FILE)"
	case dropDetail[reason] != "":
		why = dropDetail[reason]
	case rule != "":
		why = "refused: " + string(reason) + " (" + rule + ")"
	default:
		why = "refused: " + string(reason)
	}
	a.noteSeed(url, m, why)
}

// noSeedFetched returns the error of a run that ended with nothing left
// to do, alone, with seeds given and no page fetched by the crawl: one
// line per seed saying why it was not fetched. Nil otherwise.
func (a *Agent) noSeedFetched(stopped bool) error {
	if stopped || a.node != nil || len(a.seedURLs) == 0 || a.stats.Fetched.Load() > 0 || a.frontier.Paused() {
		return nil
	}
	sf := &a.seedFails
	sf.mu.Lock()
	defer sf.mu.Unlock()
	var b strings.Builder
	for i, s := range a.seedURLs {
		if i == maxSeedReasons {
			fmt.Fprintf(&b, "\n  and %d more seeds", len(a.seedURLs)-i)
			break
		}
		why := sf.why[uint32(i+1)]
		if why == "" {
			why = "not fetched (logs/crawl.log and petrel why tell more)"
		}
		fmt.Fprintf(&b, "\n  seed %s: %s", s, why)
	}
	return fmt.Errorf("%w; the crawl is not complete:%s", ErrNoSeedFetched, b.String())
}
