package console

import (
	"context"
	"errors"
	"time"

	"github.com/petrel-crawler/petrel/internal/revisit"
	"github.com/petrel-crawler/petrel/internal/stats"
)

// Crawl is what the console asks of the running crawl; internal/agent
// implements it. Every method is safe for concurrent use and returns
// promptly (what the scheduler goroutine owns is asked through it, with
// ctx bounding the wait).
type Crawl interface {
	// Counters returns the crawl's counters now.
	Counters() stats.Snapshot
	// State is the crawl's lifecycle state.
	State() State
	// Pause stops new requests from starting (those in flight finish);
	// Resume lets them start again. Both are idempotent.
	Pause() error
	Resume() error
	// Checkpoint takes a crash checkpoint now and returns when it is
	// written.
	Checkpoint(ctx context.Context) error
	// Stop begins a clean stop (state saved; the same command resumes).
	Stop()
	// AddSeeds offers URLs to the crawl through the same rules as any URL.
	AddSeeds(urls []string) []SeedResult
	// Settings returns the settings in force by their config-file names,
	// each value written as in the config file.
	Settings() map[string]any
	// DescribeSettings describes every setting, in --help order.
	DescribeSettings() []SettingInfo
	// Reconfigure applies changes (config-file names → values) all or
	// nothing; an error (ErrInvalid) names the first bad one.
	Reconfigure(changes map[string]any) error
	// Hosts lists the hosts the crawl holds, sorted by q.Sort, at most
	// q.Limit of them.
	Hosts(ctx context.Context, q HostQuery) ([]HostSummary, error)
	// Host describes one host (false: the crawl holds nothing of it).
	Host(ctx context.Context, name string) (HostDetail, bool, error)
	// Why tells everything the crawl knows about one URL.
	Why(ctx context.Context, rawURL string) (Why, error)
	// Block stops fetching from the hosts, addresses and CIDR ranges
	// given, from now on, dropping their queued URLs.
	Block(ctx context.Context, entries []string) (BlockResult, error)
	// Members lists the cluster's members (nil when not clustered).
	Members() []Member
	// Revisits returns the figures of a revisit crawl's schedule; false
	// when the crawl is not one.
	Revisits() (revisit.Figures, bool)
}

// ErrInvalid marks a request the crawl refused because it is wrong (the
// API answers it with 400 and the error's text).
var ErrInvalid = errors.New("invalid")

// State is a crawl's lifecycle state.
type State string

// The states of a crawl.
const (
	Running  State = "running"
	Paused   State = "paused"
	Stopping State = "stopping"
	Finished State = "finished"
)

// SettingInfo describes one setting (GET /config?describe=1).
type SettingInfo struct {
	Name    string `json:"name"`
	Value   any    `json:"value"`
	Default string `json:"default"`
	Kind    string `json:"kind"`
	Group   string `json:"group"`
	Live    bool   `json:"live"`            // can change while the crawl runs
	Fixed   string `json:"fixed,omitempty"` // why it cannot
	// ClusterWide: every agent of a crawl of several holds the same
	// value; an agent with another is refused at hello, and a live change
	// is made on every agent or on none.
	ClusterWide bool     `json:"cluster_wide"`
	Help        string   `json:"help"`
	Choices     []string `json:"choices,omitempty"`
}

// SeedResult says what became of one URL given to AddSeeds.
type SeedResult struct {
	URL      string `json:"url"`
	Accepted bool   `json:"accepted"`
	Reason   string `json:"reason,omitempty"` // why it was refused
	// Requeued: the crawl knew the URL and had given it up after
	// failures; it is queued again (Accepted too).
	Requeued bool `json:"requeued,omitempty"`
}

// HostQuery selects and orders the hosts of GET /hosts.
type HostQuery struct {
	Sort  string // "queued" (default), "fetched" or "errors"
	Limit int    // at most this many (default 50, at most 10,000)
}

// HostSummary is one line of GET /hosts.
type HostSummary struct {
	Host    string `json:"host"` // politeness key (scheme+authority by default)
	Queued  int64  `json:"queued"`
	Fetched int64  `json:"fetched"`
	Errors  int64  `json:"errors"`
	Bytes   int64  `json:"bytes"`
	State   string `json:"state"` // active, waiting, idle, broken
}

// HostDetail is GET /hosts/{host}.
type HostDetail struct {
	HostSummary
	Addr        string     `json:"addr,omitempty"`
	InFlight    int        `json:"in_flight"`
	NextFetch   *time.Time `json:"next_fetch,omitempty"`
	Delay       string     `json:"delay"`        // delay in force
	DelayReason string     `json:"delay_reason"` // host-delay, crawl-delay, retry-after, adaptive
	IPNextFetch *time.Time `json:"ip_next_fetch,omitempty"`
	BudgetUsed  int64      `json:"budget_used"`
	BudgetLimit int64      `json:"budget_limit"`
	Robots      string     `json:"robots"` // robots.txt state and rules in force
	Virtualized int64      `json:"virtualized"`
	Retries     int        `json:"retries"`
	LastErrors  []string   `json:"last_errors,omitempty"`
	Next        []string   `json:"next,omitempty"`         // the first URLs of its queue in RAM
	NextOnDisk  []string   `json:"next_on_disk,omitempty"` // the first URLs of its queue on disk
}

// BlockResult is the answer to POST /blocklist.
type BlockResult struct {
	Added   []string `json:"added"`
	Dropped int64    `json:"dropped"` // queued URLs dropped
}

// Member is one agent of a cluster.
type Member struct {
	Name  string `json:"name"`
	Addr  string `json:"addr"`
	State string `json:"state"`
	Owned int    `json:"owned,omitempty"` // share of the keys, in parts per thousand
}
