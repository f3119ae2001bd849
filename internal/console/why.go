package console

import (
	"fmt"
	"strings"
	"time"
)

// The states a URL can be in, as Why reports them.
const (
	WhyNeverSeen   = "never-seen"  // nothing of the crawl knows it
	WhyRefused     = "refused"     // a rule refused it (Rule says which)
	WhyCacheOnly   = "cache-only"  // the URL cache has it and nothing else does: see Caveats
	WhyInSieve     = "in-sieve"    // offered, waiting for the sieve's next flush
	WhyKnown       = "known"       // the sieve has it; it is not queued, fetched, nor refused by what is kept
	WhyReady       = "ready"       // in the ready queue
	WhyQueued      = "queued"      // in its visit state's queue (in RAM)
	WhyVirtualized = "virtualized" // in its visit state's queue, on disk
	WhyInFlight    = "in-flight"   // being fetched
	WhyParsing     = "parsing"     // fetched, its links not yet enqueued
	WhyFetched     = "fetched"     // a response was stored
	WhyFailed      = "failed"      // fetching failed (see Fact "error"; retries may be left)
	WhyRetrying    = "retry-wait"  // failed, waiting for its retry
)

// Why is everything the crawl knows about one URL.
type Why struct {
	URL    string `json:"url"`              // as normalised by the crawl
	State  string `json:"state"`            // one of the Why* states
	Rule   string `json:"rule,omitempty"`   // for refused: scope, trap-depth, over-budget, robots, ... (crawllog reasons)
	Detail string `json:"detail,omitempty"` // one sentence
	// Facts are what backs the answer, in order (e.g. the matching
	// robots.txt line, a queue position, a WARC file and offset).
	Facts []Fact `json:"facts,omitempty"`
	// Caveats say what the answer depends on that the crawl did not keep.
	Caveats []string `json:"caveats,omitempty"`
	Source  string   `json:"source"` // "running crawl" or the crawl directory
}

// Fact is one named piece of evidence.
type Fact struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Add appends a fact.
func (w *Why) Add(name string, value any) {
	var s string
	switch v := value.(type) {
	case time.Time:
		s = v.UTC().Format(time.RFC3339Nano)
	case string:
		s = v
	default:
		s = fmt.Sprint(v)
	}
	w.Facts = append(w.Facts, Fact{name, s})
}

// Text formats the answer for a terminal.
func (w Why) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n  state   %s", w.URL, w.State)
	if w.Rule != "" {
		fmt.Fprintf(&b, " (%s)", w.Rule)
	}
	b.WriteByte('\n')
	if w.Detail != "" {
		fmt.Fprintf(&b, "  %s\n", w.Detail)
	}
	width := 0
	for _, f := range w.Facts {
		width = max(width, len(f.Name))
	}
	for _, f := range w.Facts {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, f.Name, f.Value)
	}
	for _, c := range w.Caveats {
		fmt.Fprintf(&b, "  note: %s\n", c)
	}
	if w.Source != "" {
		fmt.Fprintf(&b, "  (from %s)\n", w.Source)
	}
	return b.String()
}
