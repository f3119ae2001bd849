package console

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/petrel-crawler/petrel/internal/topn"
)

// Fetch is one fetch as the crawl tells the console of it.
type Fetch struct {
	URL      string
	Host     string // politeness key (scheme+authority by default)
	Status   int    // 0 when no response came
	MIME     string // Content-Type as sent
	Bytes    int64  // response bytes as transferred
	Location string // redirect target, resolved
	Err      string // the failure, when no response came
	Robots   bool   // a robots.txt fetch
	Time     time.Time
}

// Bounds of a Tally: beyond them, new names are counted under "(other)".
const (
	maxTallyHosts = 100_000
	maxTallyMIME  = 1000
	maxTallySeeds = 10_000
	recentErrors  = 100
)

// Tally keeps the figures behind the reports that the counters do not
// hold: responses by status code and by MIME type, per-host fetches,
// bytes and errors, what became of each seed, and the last errors. It
// covers what this process fetched (a resumed crawl starts it again).
// Safe for concurrent use.
type Tally struct {
	mu      sync.Mutex
	status  map[int]int64
	mime    map[string]int64
	hosts   map[string]*hostTally
	seeds   map[string]*SeedReport
	order   []string          // seeds in the order given
	chain   map[string]string // redirect target → the seed whose chain it continues
	errs    []ErrorLine       // ring of the last errors
	errNext int
}

type hostTally struct {
	fetched, errors, bytes int64
	lastErrors             []string // up to 5
}

// SeedReport is what became of one seed.
type SeedReport struct {
	Seed       string   `json:"seed"`
	Status     int      `json:"status"`              // of the last fetch of its chain (0: not fetched yet)
	Error      string   `json:"error,omitempty"`     // when no response came
	RedirectTo []string `json:"redirects,omitempty"` // the chain, in order
	Final      string   `json:"final,omitempty"`     // the URL the chain ended on
}

// ErrorLine is one recent error.
type ErrorLine struct {
	Time   time.Time `json:"time"`
	URL    string    `json:"url"`
	Status int       `json:"status,omitempty"`
	Error  string    `json:"error"`
}

// NewTally returns an empty tally.
func NewTally() *Tally {
	return &Tally{status: map[int]int64{}, mime: map[string]int64{}, hosts: map[string]*hostTally{},
		seeds: map[string]*SeedReport{}, chain: map[string]string{}}
}

// Seed records a seed whose outcome the seeds report follows.
func (t *Tally) Seed(u string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.seeds[u]; ok || len(t.seeds) >= maxTallySeeds {
		return
	}
	t.seeds[u] = &SeedReport{Seed: u}
	t.order = append(t.order, u)
	t.chain[u] = u
}

// Record counts one fetch.
func (t *Tally) Record(e Fetch) {
	mime := e.MIME
	if i := strings.IndexByte(mime, ';'); i >= 0 {
		mime = mime[:i]
	}
	mime = strings.ToLower(strings.TrimSpace(mime))
	if mime == "" {
		mime = "(none)"
	}
	failed := e.Status == 0 || e.Status >= 500
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.Status > 0 && !e.Robots {
		t.status[e.Status]++
		if _, ok := t.mime[mime]; ok || len(t.mime) < maxTallyMIME {
			t.mime[mime]++
		} else {
			t.mime["(other)"]++
		}
	}
	h := t.hosts[e.Host]
	if h == nil {
		key := e.Host
		if len(t.hosts) >= maxTallyHosts {
			key = "(other)"
		}
		if h = t.hosts[key]; h == nil {
			h = new(hostTally)
			t.hosts[key] = h
		}
	}
	h.bytes += e.Bytes
	if !e.Robots {
		h.fetched++
	}
	if failed {
		h.errors++
		msg := e.Err
		if msg == "" {
			msg = "status " + strconv.Itoa(e.Status)
		}
		if len(h.lastErrors) >= 5 {
			h.lastErrors = append(h.lastErrors[:0], h.lastErrors[1:]...)
		}
		h.lastErrors = append(h.lastErrors, e.Time.UTC().Format(time.RFC3339)+" "+e.URL+": "+msg)
		line := ErrorLine{Time: e.Time, URL: e.URL, Status: e.Status, Error: msg}
		if len(t.errs) < recentErrors {
			t.errs = append(t.errs, line)
		} else {
			t.errs[t.errNext] = line
			t.errNext = (t.errNext + 1) % recentErrors
		}
	}
	if seed, ok := t.chain[e.URL]; ok && !e.Robots {
		s := t.seeds[seed]
		s.Status, s.Error, s.Final = e.Status, e.Err, e.URL
		if e.Status >= 300 && e.Status < 400 && e.Location != "" && len(s.RedirectTo) < 20 {
			s.RedirectTo = append(s.RedirectTo, e.Location)
			t.chain[e.Location] = seed
		}
	}
}

// Count is one line of a breakdown.
type Count struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

// StatusCodes returns the responses by status code, most frequent first.
func (t *Tally) StatusCodes() []Count {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Count, 0, len(t.status))
	for c, n := range t.status {
		out = append(out, Count{strconv.Itoa(c), n})
	}
	return sortCounts(out)
}

// MIMETypes returns the responses by MIME type, most frequent first.
func (t *Tally) MIMETypes() []Count {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Count, 0, len(t.mime))
	for m, n := range t.mime {
		out = append(out, Count{m, n})
	}
	return sortCounts(out)
}

func sortCounts(c []Count) []Count {
	sort.Slice(c, func(i, j int) bool {
		if c[i].Count != c[j].Count {
			return c[i].Count > c[j].Count
		}
		return c[i].Name < c[j].Name
	})
	return c
}

// Seeds returns the seeds' reports in the order the seeds were given.
func (t *Tally) Seeds() []SeedReport {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]SeedReport, 0, len(t.order))
	for _, s := range t.order {
		r := *t.seeds[s]
		r.RedirectTo = append([]string(nil), r.RedirectTo...)
		out = append(out, r)
	}
	return out
}

// Errors returns the last errors, newest first.
func (t *Tally) Errors() []ErrorLine {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]ErrorLine, 0, len(t.errs))
	for i := range t.errs {
		out = append(out, t.errs[(t.errNext+len(t.errs)-1-i)%len(t.errs)])
	}
	return out
}

// host fills the fetched, errors and bytes of one host.
func (t *Tally) host(h *HostSummary) (lastErrors []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ht := t.hosts[h.Host]; ht != nil {
		h.Fetched, h.Errors, h.Bytes = ht.fetched, ht.errors, ht.bytes
		return append([]string(nil), ht.lastErrors...)
	}
	return nil
}

// topHosts returns up to n hosts by fetched or errors.
func (t *Tally) topHosts(by string, n int) []HostSummary {
	key := func(h *hostTally) int64 { return h.fetched }
	if by == "errors" {
		key = func(h *hostTally) int64 { return h.errors }
	}
	type named struct {
		name string
		h    *hostTally
	}
	top := topn.New(n, func(a, b named) bool {
		if ka, kb := key(a.h), key(b.h); ka != kb {
			return ka < kb
		}
		return a.name > b.name
	})
	t.mu.Lock()
	for name, h := range t.hosts {
		top.Push(named{name, h})
	}
	kept := top.Sorted()
	out := make([]HostSummary, 0, len(kept))
	for _, k := range kept {
		out = append(out, HostSummary{Host: k.name, Fetched: k.h.fetched, Errors: k.h.errors, Bytes: k.h.bytes})
	}
	t.mu.Unlock()
	return out
}
